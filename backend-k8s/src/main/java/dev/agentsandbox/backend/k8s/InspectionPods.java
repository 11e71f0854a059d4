package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.policy.config.ProxyPolicy;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a run that inspects hosts adds to its bundle (docs/backends/k8s.md, "Inspected hosts"): the
 * credentials the proxy injects in a Secret that only the proxy's pod mounts, and the proxy's CA
 * certificate in a ConfigMap that the agent's pod joins to its image's own trust bundle with an
 * init container. The agent's pod never references the proxy's Secret; the proxy's pod never
 * references the agent's.
 */
final class InspectionPods {
  /** The Secret holding the values of the credentials the proxy injects, one key per name. */
  static final String PROXY_CREDENTIALS_SECRET = "proxy-credentials";

  static final String PROXY_CREDENTIALS_VOLUME = "proxy-credentials";

  /** The ConfigMap with the run CA's certificate and the Java trust store made from it. */
  static final String TRUST_CONFIG_MAP = "run-trust";

  /** What the bundle (and so a plan) holds in place of the certificate, made at launch. */
  static final String CA_AT_LAUNCH = "MADE-BY-THE-RUN'S-PROXY-AT-LAUNCH";

  static final String TRUST_SOURCE_VOLUME = "trust-source";
  static final String TRUST_SOURCE_MOUNT = "/run/agent-sandbox/trust-source";
  static final String TRUST_VOLUME = "trust";
  static final String TRUST_INIT = "trust";
  private static final int TRUST_TMPFS_MB = 4;

  private InspectionPods() {}

  /**
   * The proxy's credentials as an immutable Secret. The bundle holds it with {@link
   * BundleFactory#REDACTED} values; only the launch builds it with the values, before the proxy's
   * pod, which reads them at start.
   */
  static Secret proxyCredentials(RunSpec spec, BundleFactory.Values values) {
    Map<String, String> data = new TreeMap<>();
    for (RunCredential credential : spec.proxyCredentials()) {
      data.put(
          credential.name(),
          values == BundleFactory.Values.INCLUDED ? credential.value() : BundleFactory.REDACTED);
    }
    return new SecretBuilder()
        .withNewMetadata()
        .withName(PROXY_CREDENTIALS_SECRET)
        .withNamespace(BundleFactory.namespaceOf(spec.runId()))
        .withLabels(spec.labels())
        .endMetadata()
        .withType("Opaque")
        .withImmutable(true)
        .withStringData(data)
        .build();
  }

  /** The proxy pod's volume of its Secret: read by the proxy's user (the pod's fsGroup) alone. */
  static Volume proxyCredentialsVolume() {
    return new VolumeBuilder()
        .withName(PROXY_CREDENTIALS_VOLUME)
        .withNewSecret()
        .withSecretName(PROXY_CREDENTIALS_SECRET)
        .withDefaultMode(SandboxPods.CREDENTIALS_SECRET_MODE)
        .withOptional(false)
        .endSecret()
        .build();
  }

  /** Where the proxy reads them: its policy's {@code credentials_dir}. */
  static VolumeMount proxyCredentialsMount() {
    return new VolumeMountBuilder()
        .withName(PROXY_CREDENTIALS_VOLUME)
        .withMountPath(ProxyPolicy.PROXY_CREDENTIALS_DIR)
        .withReadOnly(true)
        .build();
  }

  /**
   * The run CA's certificate ({@code run-ca.pem}) and the Java trust store ({@code ca-bundle.p12});
   * with {@code caPem} empty (a plan), a placeholder and no store.
   */
  static ConfigMap trust(RunSpec spec, java.util.Optional<String> caPem) {
    ConfigMapBuilder builder =
        new ConfigMapBuilder()
            .withNewMetadata()
            .withName(TRUST_CONFIG_MAP)
            .withNamespace(BundleFactory.namespaceOf(spec.runId()))
            .withLabels(spec.labels())
            .endMetadata()
            .withImmutable(true)
            .withData(Map.of("run-ca.pem", caPem.orElse(CA_AT_LAUNCH)));
    caPem.ifPresent(
        pem ->
            builder.withBinaryData(
                Map.of(
                    "ca-bundle.p12",
                    Base64.getEncoder().encodeToString(RunTrust.javaTrustStore(pem)))));
    return builder.build();
  }

  static Volume trustSourceVolume() {
    return new VolumeBuilder()
        .withName(TRUST_SOURCE_VOLUME)
        .withNewConfigMap()
        .withName(TRUST_CONFIG_MAP)
        .withOptional(false)
        .endConfigMap()
        .build();
  }

  /** The agent's trust folder: memory-backed, written by the init container, read-only after. */
  static Volume trustVolume() {
    return new VolumeBuilder()
        .withName(TRUST_VOLUME)
        .withNewEmptyDir()
        .withMedium("Memory")
        .withSizeLimit(new Quantity(TRUST_TMPFS_MB + "Mi"))
        .endEmptyDir()
        .build();
  }

  static VolumeMount trustMount(boolean readOnly) {
    return new VolumeMountBuilder()
        .withName(TRUST_VOLUME)
        .withMountPath(RunTrust.DIR)
        .withReadOnly(readOnly)
        .build();
  }

  /**
   * The init container that joins the run CA's certificate to the image's own bundle. It runs the
   * agent's image, since that is where the image's bundle is, with {@code /bin/sh}, {@code cp},
   * {@code cat} and {@code chmod} (an image without a shell cannot inspect on Kubernetes), and sees
   * the ConfigMap and the trust folder only — no credential.
   */
  static Container trustInit(
      RunSpec spec, SecurityContext security, ResourceRequirements resources) {
    String script =
        "cp '"
            + TRUST_SOURCE_MOUNT
            + "/run-ca.pem' '"
            + TRUST_SOURCE_MOUNT
            + "/ca-bundle.p12' '"
            + RunTrust.DIR
            + "/' || exit 1; "
            + RunTrust.joinScript("", RunTrust.RUN_CA, RunTrust.BUNDLE)
            + "; chmod 0444 '"
            + RunTrust.DIR
            + "'/*";
    return new ContainerBuilder()
        .withName(TRUST_INIT)
        .withImage(spec.image())
        .withCommand("/bin/sh", "-c", script)
        .withTerminationMessagePolicy("FallbackToLogsOnError")
        .withResources(resources)
        .withSecurityContext(security)
        .withVolumeMounts(
            new VolumeMountBuilder()
                .withName(TRUST_SOURCE_VOLUME)
                .withMountPath(TRUST_SOURCE_MOUNT)
                .withReadOnly(true)
                .build(),
            trustMount(false))
        .build();
  }
}
