package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.relay.CertificatePin;
import java.util.Objects;

/**
 * What a session adds to its run's bundle, beyond the settings: the pin of the certificate the
 * control plane made for this session, which the pod's relay accepts and nothing else. A plan shows
 * {@link #PIN_AT_LAUNCH} instead: the key pair is made only at launch, in memory.
 *
 * @param clientPin the pin's 64 hex digits, or {@link #PIN_AT_LAUNCH}
 */
record SessionWiring(String clientPin) {
  /** Shown in a plan where the launch puts the control plane's certificate pin. */
  static final String PIN_AT_LAUNCH = "CONTROL-PLANE-CERTIFICATE-SHA256-MADE-AT-LAUNCH";

  SessionWiring {
    Objects.requireNonNull(clientPin, "clientPin");
    if (!clientPin.equals(PIN_AT_LAUNCH)) {
      new CertificatePin(clientPin);
    }
  }

  /** A plan's: the pin is made at launch. */
  static SessionWiring planned() {
    return new SessionWiring(PIN_AT_LAUNCH);
  }

  /** A launch's, for the control plane's certificate of this session. */
  static SessionWiring of(CertificatePin pin) {
    return new SessionWiring(pin.sha256());
  }
}
