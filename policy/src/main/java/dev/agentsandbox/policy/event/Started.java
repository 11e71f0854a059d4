package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.started}: what actually runs, once the backend has created the sandbox.
 *
 * @param runtime the runtime the sandbox runs under
 * @param image the image as named
 * @param imageId the image's content id ({@code sha256:...}) where the backend resolves one
 * @param proxyPool the proxy-pool standby the run was built on, when it was
 */
public record Started(
    String runtime, String image, Optional<String> imageId, Optional<String> proxyPool)
    implements RunEvent {

  public Started {
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(image, "image");
    Objects.requireNonNull(imageId, "imageId");
    Objects.requireNonNull(proxyPool, "proxyPool");
  }

  @Override
  public EventType type() {
    return EventType.STARTED;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("runtime", runtime)
        .put("image", image)
        .putIfPresent("image_id", imageId)
        .putIfPresent("proxy_pool", proxyPool)
        .build();
  }

  static Started read(Object data) {
    Fields f = Fields.of(EventType.STARTED, data);
    Started started =
        new Started(
            f.string("runtime"),
            f.string("image"),
            f.optionalString("image_id"),
            f.optionalString("proxy_pool"));
    f.done();
    return started;
  }
}
