package dev.agentsandbox.backend.microvm;

/**
 * Where one run's VM sits on the host: its slot in the subnet pool, its tap and addresses, and the
 * uids its VMM and proxy run as. A plan shows a placeholder placement, since slots are taken only
 * at launch.
 */
record Placement(
    String slot,
    String tap,
    String hostAddress,
    String guestAddress,
    String vmmUid,
    String proxyUid) {
  static Placement of(int slot, SubnetPool pool, MicroVmConfig config) {
    return new Placement(
        Integer.toString(slot),
        SubnetPool.tapName(slot),
        pool.hostAddress(slot),
        pool.guestAddress(slot),
        Integer.toString(config.vmmUidBase() + slot),
        Integer.toString(config.proxyUidBase() + slot));
  }

  /** What a plan shows before a slot is taken. */
  static Placement placeholder() {
    return new Placement(
        "<slot>",
        NftFence.TAP_PREFIX + "<slot>",
        "<tap-host-address>",
        "<guest-address>",
        "<vmm-uid>",
        "<proxy-uid>");
  }
}
