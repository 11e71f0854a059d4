package dev.agentsandbox.cli;

import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.FirstAdminToken;
import dev.agentsandbox.store.Store;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox serve}: runs the control plane in the foreground until interrupted. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Runs the control plane (admin API, /healthz, /readyz, /metrics) in the foreground.",
      "Migrates the store at start-up. On the first start with no active token, writes an admin"
          + " token holding every scope to DATA_DIR/admin-token (mode 0600) and prints its path."
    })
final class ServeCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--listen",
      paramLabel = "HOST:PORT",
      description = "Address to listen on (env AGENT_SANDBOX_LISTEN; default 127.0.0.1:8080)")
  String listen;

  @Option(
      names = "--data-dir",
      paramLabel = "DIR",
      description =
          "Where the first admin token is written (env AGENT_SANDBOX_DATA_DIR; default ./data)")
  Path dataDir;

  @Mixin StoreOptions store;

  /** A running control plane. */
  record Running(AgentSandboxServer server, Store store, Optional<Path> adminTokenFile)
      implements AutoCloseable {
    @Override
    public void close() {
      server.close();
      store.close();
    }
  }

  @Override
  public Integer call() throws InterruptedException {
    Running running = start(spec.commandLine().getOut());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  running.close();
                  stopped.countDown();
                },
                "agent-sandbox-shutdown"));
    stopped.await();
    return 0;
  }

  /** Opens the store, ensures the first admin token and starts listening. */
  Running start(PrintWriter out) {
    InetSocketAddress address =
        ListenAddress.parse(setting(listen, "AGENT_SANDBOX_LISTEN", "127.0.0.1:8080"));
    Path data =
        dataDir != null ? dataDir : Path.of(setting(null, "AGENT_SANDBOX_DATA_DIR", "data"));
    Store opened = store.open();
    try {
      Optional<Path> tokenFile = FirstAdminToken.ensure(opened, data);
      AgentSandboxServer server = AgentSandboxServer.start(address, opened);
      tokenFile.ifPresent(
          file ->
              out.println(
                  "first admin token (all scopes) written to "
                      + file
                      + " (readable only by you; export AGENT_SANDBOX_TOKEN=$(cat "
                      + file
                      + "))"));
      out.println("store: " + opened.dialect());
      out.println("listening on " + server.baseUrl());
      out.flush();
      return new Running(server, opened, tokenFile);
    } catch (RuntimeException e) {
      opened.close();
      throw e;
    }
  }

  private static String setting(String option, String env, String fallback) {
    if (option != null && !option.isBlank()) {
      return option;
    }
    String value = System.getenv(env);
    return value == null || value.isBlank() ? fallback : value;
  }
}
