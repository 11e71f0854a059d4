/**
 * Credentials minted for one run and no longer: each {@link
 * dev.agentsandbox.credentials.IssuedCredential} expires no later than the run's deadline, so no
 * standing secret is ever copied into a sandbox. {@link dev.agentsandbox.credentials.JwtIssuer}
 * signs JWTs with the operator's rotating keys; {@link dev.agentsandbox.credentials.CommandIssuer}
 * runs an operator's executable (STS AssumeRole with a session policy, Vault dynamic secrets, a
 * cloud's workload identity) with a time-out.
 */
package dev.agentsandbox.credentials;
