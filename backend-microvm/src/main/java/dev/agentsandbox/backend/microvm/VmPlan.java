package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.SandboxPlan;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A run's plan: the objects of its {@link VmLayout} in the order a launch creates them, so what a
 * plan shows is what a launch creates. Names and variables only: a credential's value never appears
 * in a plan.
 */
final class VmPlan {
  private VmPlan() {}

  /** Everything in creation order, as {@link MicroVmBackend#launch} creates it. */
  static SandboxPlan of(
      VmLayout layout, Isolation isolation, NftFence fence, List<String> resolvers, Path rootDisk) {
    List<Manifest> manifests = new ArrayList<>();
    manifests.add(
        new Manifest(
            "root-disk",
            rootDisk.getFileName().toString(),
            Map.of(
                "image",
                layout.spec().image(),
                "path",
                rootDisk.toString(),
                "shared",
                true,
                "mode",
                "read-only")));
    manifests.add(
        new Manifest(
            "run-directory",
            layout.dir().toString(),
            Map.of("labels", new TreeMap<>(layout.spec().labels()), "record", RunRecord.FILE)));
    manifests.add(
        new Manifest(
            "tap",
            layout.placement().tap(),
            Map.of(
                "commands",
                layout.tapCommands().stream().map(c -> String.join(" ", c)).toList(),
                "host_address",
                layout.placement().hostAddress() + "/30",
                "guest_address",
                layout.placement().guestAddress())));
    manifests.add(new Manifest("nftables-table", NftFence.TABLE, fence.table(resolvers)));
    manifests.add(
        new Manifest(
            "nftables-elements",
            layout.placement().tap(),
            NftFence.addElements(layout.fenceSlot())));
    manifests.add(
        new Manifest(
            "proxy",
            "asb-" + layout.spec().runId() + "-proxy",
            Map.of(
                "command",
                layout.proxyCommandLine(),
                "policy_file",
                layout.policyFile().toString(),
                "policy",
                layout.proxyPolicyJson(),
                "credentials_dir",
                layout.proxyCredentialsDir().toString(),
                "credentials",
                layout.spec().proxyCredentials().stream().map(RunCredential::name).toList())));
    manifests.add(
        new Manifest(
            "output-disk",
            layout.outputDisk().toString(),
            Map.of(
                "bytes",
                layout.outputDiskBytes(),
                "owner",
                layout.placement().vmmUid(),
                "mode",
                "0600",
                "content",
                "a tar of "
                    + RunContract.OUT_DIR
                    + ", written by the guest when the workload ends")));
    // Names and variables only: a credential's value never appears in a plan.
    manifests.add(
        new Manifest(
            "initramfs",
            layout.initramfs().toString(),
            Map.of(
                "run_env", layout.guestSettings(),
                "argv", layout.session() ? List.of() : layout.spec().command(),
                "env_keys", layout.workloadEnv().keySet().stream().toList(),
                "credentials",
                    layout.spec().credentials().stream()
                        .map(c -> RunContract.CREDENTIALS_DIR + "/" + c.name())
                        .toList(),
                "placeholders", List.copyOf(layout.spec().egress().proxyHeldCredentials()),
                "trust",
                    layout.inspects()
                        ? List.of(
                            dev.agentsandbox.backend.RunTrust.RUN_CA,
                            dev.agentsandbox.backend.RunTrust.BUNDLE,
                            dev.agentsandbox.backend.RunTrust.JAVA_STORE)
                        : List.of())));
    manifests.add(
        new Manifest(
            "vmm",
            "asb-" + layout.spec().runId(),
            Map.of(
                "runtime", layout.vmm().runtime(),
                "command", layout.vmm().commandLine(layout.vmRequest(rootDisk)))));
    return new SandboxPlan(MicroVmBackend.NAME, layout.vmm().runtime(), isolation, manifests);
  }
}
