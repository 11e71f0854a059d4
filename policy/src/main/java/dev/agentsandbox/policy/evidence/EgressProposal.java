package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Loosening;
import java.util.List;
import java.util.Objects;

/**
 * What an agent's refusals say its allow-list lacks: the entries that would have let them through,
 * the refusals no entry fixes, and those the current configuration already allows.
 *
 * @param agent the agent
 * @param refusalsRead every refusal read (aggregated rows by their count)
 * @param entries the proposed entries, the best evidenced first (at most {@link
 *     EgressProposer#MAX_ENTRIES})
 * @param entriesLeftOut entries not proposed because the list was full
 * @param notFixable refusals no entry would let through, the most frequent first (at most {@link
 *     EgressProposer#MAX_GROUPS})
 * @param notFixableLeftOut further groups of those
 * @param nowAllowed refusals the current configuration allows (it changed since they happened)
 * @param nowAllowedLeftOut further groups of those
 * @param allowAfter the agent's allow-list with the proposal added: its entries, then the new ones
 * @param loosenings what saving {@code allowAfter} loosens (the new entries)
 */
public record EgressProposal(
    String agent,
    long refusalsRead,
    List<ProposedEntry> entries,
    int entriesLeftOut,
    List<NotFixable> notFixable,
    int notFixableLeftOut,
    List<RefusalGroup> nowAllowed,
    int nowAllowedLeftOut,
    AllowList allowAfter,
    List<Loosening> loosenings) {
  public EgressProposal {
    Objects.requireNonNull(agent, "agent");
    entries = List.copyOf(entries);
    notFixable = List.copyOf(notFixable);
    nowAllowed = List.copyOf(nowAllowed);
    Objects.requireNonNull(allowAfter, "allowAfter");
    loosenings = List.copyOf(loosenings);
  }

  /** Whether there is nothing to add. */
  public boolean empty() {
    return entries.isEmpty();
  }
}
