package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one sandbox (a run's, or a proxy-pool standby's) has created on the daemon, recorded as it
 * is created, and its removal: the teardown of a run, of a launch cut short and of a standby no run
 * took. Each object is recorded right after the call that created it, so that a launch failing at
 * any step leaves nothing this type does not know of (the volumes are recorded by name before they
 * are created: a creation the daemon completed but whose answer was lost is removed all the same).
 * Thread-safe; {@link #remove()} is idempotent.
 */
final class SandboxObjects {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxObjects.class);

  private final DockerClient client;
  private final SubnetAllocator subnets;
  private final String owner;
  private final List<Closeable> streams = new CopyOnWriteArrayList<>();
  private final List<String> containers = new CopyOnWriteArrayList<>();
  private final Set<String> volumes = java.util.Collections.synchronizedSet(new LinkedHashSet<>());
  private final List<String> networks = new CopyOnWriteArrayList<>();
  private final List<SubnetAllocator.Block> blocks = new CopyOnWriteArrayList<>();

  /**
   * @param owner what the objects belong to, for messages ({@code run abc}, {@code proxy-pool
   *     standby sb-...})
   */
  SandboxObjects(DockerClient client, SubnetAllocator subnets, String owner) {
    this.client = client;
    this.subnets = subnets;
    this.owner = owner;
  }

  String owner() {
    return owner;
  }

  void container(String id) {
    containers.add(id);
  }

  void volume(String name) {
    volumes.add(name);
  }

  void network(String id) {
    networks.add(id);
  }

  /** A followed output or an attached stream, closed first at removal. */
  void stream(Closeable stream) {
    streams.add(stream);
  }

  /**
   * Takes {@code count} subnet blocks for the sandbox's networks, before any network exists: an
   * exhausted pool refuses the sandbox before anything is created.
   */
  List<SubnetAllocator.Block> allocateBlocks(int count) {
    List<SubnetAllocator.Block> taken = subnets.allocate(count, owner);
    blocks.addAll(taken);
    return List.copyOf(blocks);
  }

  /** The blocks held now, in the order the networks use them. */
  List<SubnetAllocator.Block> blocks() {
    return List.copyOf(blocks);
  }

  /**
   * The daemon refused block {@code slot} as overlapping a network the allocator did not see: sets
   * it aside and holds the next free one in its place.
   */
  SubnetAllocator.Block replaceRefusedBlock(int slot) {
    SubnetAllocator.Block refused = blocks.get(slot);
    subnets.refused(refused);
    SubnetAllocator.Block next = subnets.allocate(1, owner).get(0);
    blocks.set(slot, next);
    return next;
  }

  /**
   * Makes everything {@code other} holds this sandbox's own (a run taking over a proxy-pool
   * standby): from now on this removal removes it, and {@code other}'s removes nothing.
   */
  void takeOver(SandboxObjects other) {
    streams.addAll(other.streams);
    containers.addAll(other.containers);
    volumes.addAll(other.volumes);
    networks.addAll(other.networks);
    blocks.addAll(other.blocks);
    other.streams.clear();
    other.containers.clear();
    other.volumes.clear();
    other.networks.clear();
    other.blocks.clear();
  }

  /**
   * Removes everything recorded: the streams are closed, then the containers (with their anonymous
   * volumes), the volumes (a container must be gone first) and the networks (their endpoints must
   * be gone first); the subnet blocks are released. Every object is tried whatever failed before.
   *
   * @return what could not be removed, each as {@code <kind> <id>: <the daemon's words>}; empty
   *     when nothing is left. What is listed stays recorded, so a later call tries it again (and
   *     the reaper removes it by label in any case)
   */
  List<String> remove() {
    List<String> problems = new ArrayList<>();
    for (Closeable stream : List.copyOf(streams)) {
      close(stream, owner, "a followed stream");
    }
    streams.clear();
    for (String id : List.copyOf(containers)) {
      if (removed(
          problems,
          "container " + id,
          () -> client.removeContainerCmd(id).withForce(true).withRemoveVolumes(true).exec())) {
        containers.remove(id);
      }
    }
    List<String> names;
    synchronized (volumes) {
      names = List.copyOf(volumes);
    }
    for (String name : names) {
      if (removed(problems, "volume " + name, () -> client.removeVolumeCmd(name).exec())) {
        volumes.remove(name);
      }
    }
    for (String id : List.copyOf(networks)) {
      if (removed(problems, "network " + id, () -> client.removeNetworkCmd(id).exec())) {
        networks.remove(id);
      }
    }
    // Released even when a removal failed: the allocator reads the daemon's networks on every
    // allocation, so a network still there keeps its block out of use until it is gone.
    List<SubnetAllocator.Block> held = List.copyOf(blocks);
    blocks.clear();
    held.forEach(subnets::release);
    return problems;
  }

  /**
   * Closes a stream of the daemon's API (a followed output, a wait, an attach). A stream that fails
   * to close holds a connection of this JVM only, which the daemon ends with its container: not a
   * leftover of the sandbox, so not a failure of what called this, but said in the log, not hidden.
   */
  static void close(Closeable stream, String owner, String what) {
    try {
      stream.close();
    } catch (IOException | RuntimeException e) {
      LOG.warn("{}: closing {} failed: {}", owner, what, DockerErrors.describe(e));
    }
  }

  /** Whether the object is gone now (removed, or already gone); else its problem is listed. */
  private static boolean removed(List<String> problems, String what, Runnable removal) {
    try {
      removal.run();
      return true;
    } catch (RuntimeException e) {
      if (DockerErrors.alreadyDone(e)) {
        return true;
      }
      problems.add(what + ": " + DockerErrors.describe(e));
      return false;
    }
  }
}
