-- The agents a token is limited to (docs/api.md "Tokens and scopes"): NULL for every agent, else
-- their names separated by single spaces. A token limited to agents sees and touches nothing of any
-- other agent (docs/architecture.md invariant 13).
ALTER TABLE api_token ADD COLUMN agents TEXT;
