package dev.agentsandbox.backend.microvm;

import java.util.ArrayList;
import java.util.List;

/**
 * QEMU's {@code microvm} machine: no PCI, no firmware option ROMs, no default devices; only the
 * devices a run needs (the root disk read-only and the output disk, both virtio-blk and told apart
 * by their serial numbers; one virtio-net on the run's tap; one virtio-serial controller with three
 * ports; a serial console to a file). QEMU runs under {@code setpriv} as an unprivileged uid with
 * no capabilities and no new privileges, and confines itself further with its seccomp sandbox
 * ({@code -sandbox on}). It dies with its control plane and at its run's hard limit ({@link
 * HostChildren}).
 */
final class QemuMicroVm implements Vmm {
  private final MicroVmConfig config;

  QemuMicroVm(MicroVmConfig config) {
    this.config = config;
  }

  @Override
  public String runtime() {
    return "qemu-" + config.accel();
  }

  /**
   * The VMM's supplementary groups: none under TCG; under KVM the group of {@code /dev/kvm} (the
   * {@code kvm} group that scripts/install-host.sh gives it), never root's.
   */
  static String groups(MicroVmConfig config) {
    if (config.emulated()) {
      return "--clear-groups";
    }
    try {
      Object gid = java.nio.file.Files.getAttribute(java.nio.file.Path.of("/dev/kvm"), "unix:gid");
      return gid instanceof Integer g && g != 0 ? "--groups=" + g : "--clear-groups";
    } catch (java.io.IOException | RuntimeException e) {
      return "--clear-groups";
    }
  }

  @Override
  public List<String> commandLine(VmRequest vm) {
    List<String> command = new ArrayList<>();
    command.addAll(
        List.of(
            "setpriv",
            "--reuid",
            vm.uid(),
            "--regid",
            vm.gid(),
            groups(config),
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs"));
    command.addAll(HostChildren.DIE_WITH_PARENT);
    command.add("--");
    command.addAll(
        List.of(
            config.qemu().toString(),
            "-name",
            vm.name(),
            "-M",
            "microvm,x-option-roms=off,isa-serial=on,rtc=off,pit=on,pic=on",
            "-accel",
            config.accel(),
            "-cpu",
            config.emulated() ? "qemu64" : "host",
            "-smp",
            Integer.toString(vm.vcpus()),
            "-m",
            vm.memoryMb() + "M",
            "-nodefaults",
            "-no-user-config",
            "-nographic",
            "-no-reboot",
            "-sandbox",
            "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
            "-kernel",
            config.kernel().toString(),
            "-initrd",
            vm.initramfs(),
            "-append",
            vm.kernelCommandLine(),
            "-chardev",
            "file,id=console,path=" + vm.consoleLog(),
            "-serial",
            "chardev:console",
            "-drive",
            "id=root,file=" + vm.rootDisk() + ",format=raw,if=none,readonly=on",
            "-device",
            "virtio-blk-device,drive=root,serial=asb-root",
            "-drive",
            "id=out,file=" + vm.outputDisk() + ",format=raw,if=none,discard=ignore",
            "-device",
            "virtio-blk-device,drive=out,serial=asb-out",
            "-netdev",
            "tap,id=net0,ifname=" + vm.tap() + ",script=no,downscript=no",
            "-device",
            "virtio-net-device,netdev=net0,mac=" + vm.mac(),
            "-device",
            "virtio-serial-device,max_ports=4",
            "-chardev",
            "socket,id=out,path=" + vm.outputSocket(),
            "-device",
            "virtserialport,chardev=out,name=asb-out",
            "-chardev",
            "socket,id=status,path=" + vm.statusSocket(),
            "-device",
            "virtserialport,chardev=status,name=asb-status",
            "-chardev",
            "socket,id=control,path=" + vm.controlSocket(),
            "-device",
            "virtserialport,chardev=control,name=asb-control"));
    return HostChildren.bounded(vm.lifetime(), command);
  }
}
