package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import org.junit.jupiter.api.Test;

class WireLogsTest {
  @Test
  void anOperatorsDebugRootStillLogsNoWireBytes() {
    LoggerContext context = new LoggerContext();
    context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).setLevel(Level.DEBUG);
    assertThat(context.getLogger("org.apache.hc.client5.http.wire").isDebugEnabled())
        .as("before: a DEBUG root logs the bytes sent to the daemon")
        .isTrue();

    WireLogs.silence(context);

    for (String name : WireLogs.LOGGERS) {
      assertThat(context.getLogger(name).isErrorEnabled()).as(name).isFalse();
    }
    assertThat(context.getLogger("dev.agentsandbox.runs").isDebugEnabled())
        .as("everything else as configured")
        .isTrue();
  }

  @Test
  void theShippedConfigurationKeepsThemOffToo() throws Exception {
    LoggerContext context = new LoggerContext();
    ch.qos.logback.classic.joran.JoranConfigurator configurator =
        new ch.qos.logback.classic.joran.JoranConfigurator();
    configurator.setContext(context);
    configurator.doConfigure(WireLogsTest.class.getResource("/logback.xml"));
    for (String name : WireLogs.LOGGERS) {
      assertThat(context.getLogger(name).getLevel()).as(name).isEqualTo(Level.OFF);
    }
  }
}
