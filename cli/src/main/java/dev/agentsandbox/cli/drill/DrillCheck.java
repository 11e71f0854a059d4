package dev.agentsandbox.cli.drill;

/**
 * One layer's expected refusal in a drill step and what was seen there.
 *
 * @param layer where the refusal is expected: {@code workload} (the command's own output and exit),
 *     {@code proxy} (the run's egress decisions), {@code audit} (the hash-chained log), {@code api}
 *     (the admin API's answer), {@code network} (the fence below the proxy), {@code limits} (the
 *     sandbox's caps), {@code deadline} (the run's TTL kill), {@code cleanup} (teardown)
 * @param expected what holding looks like, in words
 * @param seen what was observed, in words
 * @param held whether the layer held
 */
record DrillCheck(String layer, String expected, String seen, boolean held) {
  static DrillCheck of(String layer, String expected, boolean held, String seen) {
    return new DrillCheck(layer, expected, seen, held);
  }
}
