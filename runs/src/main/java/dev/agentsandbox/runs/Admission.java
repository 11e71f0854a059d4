package dev.agentsandbox.runs;

import dev.agentsandbox.backend.BackendSelector.Selection;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.config.AgentSettings;
import java.util.Objects;
import java.util.Optional;

/** What admission decided about one run request: refused, or admitted with everything to launch. */
sealed interface Admission {
  /**
   * The run may start.
   *
   * @param spec what the backend creates
   * @param selection the backend chosen, once, and what its probe found
   * @param slot the run slot this run holds until it retires
   * @param agent the agent's settings the run was admitted under (credentials, output caps)
   * @param warm the warm sandbox the run takes over, already out of the pool and the run's alone;
   *     {@code slot} is its slot
   * @param idleSeconds a session's idle time, as admitted; empty for a one-shot run
   */
  record Admitted(
      RunSpec spec,
      Selection selection,
      RunSlots.Slot slot,
      AgentSettings agent,
      Optional<WarmPool.Warm> warm,
      java.util.OptionalInt idleSeconds)
      implements Admission {
    public Admitted {
      Objects.requireNonNull(idleSeconds, "idleSeconds");
      Objects.requireNonNull(agent, "agent");
      Objects.requireNonNull(spec, "spec");
      Objects.requireNonNull(selection, "selection");
      Objects.requireNonNull(slot, "slot");
      Objects.requireNonNull(warm, "warm");
    }

    /** A run that gets a sandbox of its own. */
    Admitted(RunSpec spec, Selection selection, RunSlots.Slot slot, AgentSettings agent) {
      this(spec, selection, slot, agent, Optional.empty(), java.util.OptionalInt.empty());
    }

    /** Whether this is a session. */
    boolean session() {
      return idleSeconds.isPresent();
    }
  }

  /** The run must not start; nothing was created and no slot is held. */
  record Refused(RunRefusedException refusal) implements Admission {
    public Refused {
      Objects.requireNonNull(refusal, "refusal");
    }
  }
}
