package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Manifest;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Every object of one run's sandbox, in the order the backend creates them.
 *
 * @param namespace the run's namespace, {@code agent-run-<id>}
 * @param objects the objects, namespace first and the agent's Job last
 */
public record KubernetesBundle(String namespace, List<HasMetadata> objects) {
  private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

  public KubernetesBundle {
    Objects.requireNonNull(namespace, "namespace");
    objects = List.copyOf(objects);
  }

  /**
   * The bundle as multi-document YAML in creation order, as {@code kubectl apply} would take it.
   */
  public String toYaml() {
    StringBuilder yaml = new StringBuilder();
    for (HasMetadata object : objects) {
      String document = SERIALIZATION.asYaml(object);
      yaml.append(document.startsWith("---") ? document : "---\n" + document);
      if (!document.endsWith("\n")) {
        yaml.append('\n');
      }
    }
    return yaml.toString();
  }

  /**
   * The bundle as backend-neutral manifests. Each body is the object as a tree of maps, lists and
   * scalars rendered by fabric8's own serializer, so any JSON or YAML writer reproduces exactly
   * what the API server receives (fabric8's model types carry Jackson 3 serializers for quantities
   * and int-or-string values that another Jackson would not see).
   */
  public List<Manifest> manifests() {
    return objects.stream()
        .map(
            object ->
                new Manifest(
                    object.getKind(),
                    object.getMetadata().getName(),
                    SERIALIZATION.convertValue(object, Map.class)))
        .toList();
  }

  /** The object of the given type and name. */
  public <T extends HasMetadata> T get(Class<T> type, String name) {
    return objects.stream()
        .filter(type::isInstance)
        .map(type::cast)
        .filter(object -> object.getMetadata().getName().equals(name))
        .findFirst()
        .orElseThrow(
            () -> new NoSuchElementException(type.getSimpleName() + " " + name + " not in bundle"));
  }
}
