/**
 * The governed documents (docs/api.md, "Governance"): {@link
 * dev.agentsandbox.policy.governance.GovernedDocument} describes each one, its store key, reader,
 * writer and loosening rules, so that the server enforcing a change and the command line showing it
 * before saving decide by the same values. Pure, as the rest of {@code policy}.
 */
package dev.agentsandbox.policy.governance;
