/**
 * A run's outputs kept for review: {@link dev.agentsandbox.artifacts.OutputCollector} reads the
 * archive a backend takes of the sandbox's {@code /workspace/out} after the workload stopped and
 * keeps what is safe and within the agent's caps in an {@link
 * dev.agentsandbox.artifacts.ArtifactStore} (a folder under the data directory, or S3-compatible
 * object storage).
 */
package dev.agentsandbox.artifacts;
