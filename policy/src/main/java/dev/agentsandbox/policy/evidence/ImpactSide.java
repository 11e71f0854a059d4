package dev.agentsandbox.policy.evidence;

import java.util.List;

/**
 * One direction of a change's impact on one agent: the refusals it would have allowed, or the
 * allowed connections it would now refuse.
 *
 * @param events refusals (aggregated rows by their count), or allowed first connections
 * @param runs distinct runs among them: "this would have broken 37 runs"
 * @param hosts distinct host and port pairs among them
 * @param top the pairs with the most runs first (at most {@link EgressImpact#MAX_HOSTS})
 */
public record ImpactSide(long events, int runs, int hosts, List<ImpactHost> top) {
  /** Nothing changes in this direction. */
  public static final ImpactSide NONE = new ImpactSide(0, 0, 0, List.of());

  public ImpactSide {
    top = List.copyOf(top);
  }

  /** Whether nothing changes in this direction. */
  public boolean none() {
    return events == 0;
  }
}
