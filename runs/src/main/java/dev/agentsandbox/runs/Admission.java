package dev.agentsandbox.runs;

import dev.agentsandbox.backend.BackendSelector.Selection;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.config.AgentSettings;
import java.util.Objects;

/** What admission decided about one run request: refused, or admitted with everything to launch. */
sealed interface Admission {
  /**
   * The run may start.
   *
   * @param spec what the backend creates
   * @param selection the backend chosen, once, and what its probe found
   * @param slot the run slot this run holds until it retires
   * @param agent the agent's settings the run was admitted under (credentials, output caps)
   */
  record Admitted(RunSpec spec, Selection selection, RunSlots.Slot slot, AgentSettings agent)
      implements Admission {
    public Admitted {
      Objects.requireNonNull(agent, "agent");
      Objects.requireNonNull(spec, "spec");
      Objects.requireNonNull(selection, "selection");
      Objects.requireNonNull(slot, "slot");
    }
  }

  /** The run must not start; nothing was created and no slot is held. */
  record Refused(RunRefusedException refusal) implements Admission {
    public Refused {
      Objects.requireNonNull(refusal, "refusal");
    }
  }
}
