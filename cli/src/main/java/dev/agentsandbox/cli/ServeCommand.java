package dev.agentsandbox.cli;

import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.FirstAdminToken;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox serve",
      "  agent-sandbox serve --listen 127.0.0.1:8080 --db 'jdbc:postgresql://db:5432/sandbox?user=U&password=P'"
    },
    mixinStandardHelpOptions = true,
    description = {
      "Run the control plane: admin API, health, metrics",
      "",
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

  @Option(
      names = "--instance-id",
      paramLabel = "ID",
      description =
          "This control plane's identity in the runs table; runs it left live are recovered at"
              + " its next start (env AGENT_SANDBOX_INSTANCE_ID; default: the host name)")
  String instanceId;

  @Option(
      names = "--proxy-host",
      paramLabel = "NAME=IP[,IP...]",
      description =
          "A static name for every run's proxy, resolved without DNS (air-gapped mirrors);"
              + " repeatable")
  List<String> proxyHosts = new ArrayList<>();

  @Option(
      names = "--inspect-upstream-ca",
      paramLabel = "FILE",
      description =
          "PEM certificates every run's proxy verifies inspected hosts with instead of the"
              + " system's trust store (an organisation's own CA)")
  java.nio.file.Path inspectUpstreamCa;

  @Option(
      names = "--proxy-image",
      paramLabel = "IMAGE",
      description = "The egress proxy image each sandbox gets (default: ${DEFAULT-VALUE})",
      defaultValue = "agent-sandbox/proxy:dev")
  String proxyImage;

  @Option(
      names = "--docker-gvisor-runtime",
      paramLabel = "NAME",
      description =
          "The name gVisor's runsc is registered under in the Docker daemon; a name the daemon"
              + " lacks means runc (default: ${DEFAULT-VALUE})",
      defaultValue = "runsc")
  String dockerGvisorRuntime;

  @Option(
      names = "--docker-subnet-pool",
      paramLabel = "CIDR",
      description =
          "A private IPv4 range (such as 10.213.0.0/16) each Docker run's two networks take a /28"
              + " from; auto (the default) takes a range in 10.214.0.0/15 that no network of the"
              + " daemon and no route of this host uses, sized for the run limit",
      defaultValue = "auto")
  String dockerSubnetPool;

  @Option(
      names = "--docker-proxy-pool",
      paramLabel = "N",
      description =
          "How many proxies, each with its run's two networks and volumes, the Docker backend keeps"
              + " started and awaiting a policy, so that a cold run need not wait for its proxy"
              + " to start; 0 (off) to 32, or auto: 2 on a host with 8 GiB of memory or more, 1"
              + " with 4 GiB, else 0 (default: ${DEFAULT-VALUE})",
      defaultValue = "auto")
  String dockerProxyPool;

  @Option(
      names = "--max-runs",
      paramLabel = "N",
      description =
          "How many runs and sessions this control plane keeps live at once, 1 to 1024; each"
              + " holds its sandbox (on Docker two containers and two networks) whether it works"
              + " or idles, warm sandboxes count too, and one more is refused with 429"
              + " too_many_runs (default: ${DEFAULT-VALUE})",
      defaultValue = "16")
  int maxRuns;

  @Option(
      names = "--microvm-accel",
      paramLabel = "kvm|tcg|off",
      description =
          "How the microvm backend runs its VMs: kvm (hardware virtualization, used by auto once a"
              + " guest has booted under it), tcg (software emulation, for hosts without usable"
              + " KVM and for tests; never picked by auto, a configuration must name"
              + " backend: microvm) or off (default: ${DEFAULT-VALUE})",
      defaultValue = "kvm")
  String microvmAccel;

  @Option(
      names = "--reap-every",
      paramLabel = "SECONDS",
      description = "How often the reaper looks for leftovers (default: ${DEFAULT-VALUE})",
      defaultValue = "60")
  long reapEverySeconds;

  @Option(
      names = "--kubernetes",
      description =
          "Also run sandboxes on the cluster this process reaches (in-cluster service account or"
              + " KUBECONFIG); replicas then elect one reaper through a Lease")
  boolean kubernetes;

  @Option(
      names = "--k8s-namespace",
      paramLabel = "NAMESPACE",
      description =
          "The control plane's own namespace, where the reaper's Lease lives (default:"
              + " ${DEFAULT-VALUE})",
      defaultValue = "agent-sandbox")
  String k8sNamespace;

  @Option(
      names = "--k8s-runtime-handler",
      paramLabel = "HANDLER",
      description =
          "A RuntimeClass handler that means gVisor; repeatable (default: runsc). A RuntimeClass"
              + " with any other handler counts as absent")
  List<String> k8sRuntimeHandlers = new ArrayList<>();

  @Option(
      names = "--k8s-node-cidr",
      paramLabel = "CIDR",
      description =
          "The nodes' addresses, kept out of every sandbox proxy's reach (kubectl get nodes -o"
              + " wide); repeatable")
  List<String> k8sNodeCidrs = new ArrayList<>();

  @Option(
      names = "--k8s-apiserver-cidr",
      paramLabel = "CIDR",
      description =
          "The API server's addresses, kept out of every sandbox proxy's reach (kubectl get"
              + " endpointslices -n default -l kubernetes.io/service-name=kubernetes); repeatable")
  List<String> k8sApiServerCidrs = new ArrayList<>();

  @Option(
      names = "--artifacts-dir",
      paramLabel = "DIR",
      description =
          "Where runs' outputs are kept for review (default: artifacts/ under the data directory)")
  Path artifactsDir;

  @Option(
      names = "--artifacts-s3-bucket",
      paramLabel = "BUCKET",
      description =
          "Keep runs' outputs in this S3-compatible bucket instead (credentials from the AWS SDK's"
              + " default chain: environment, profile, instance role)")
  String artifactsS3Bucket;

  @Option(
      names = "--artifacts-s3-endpoint",
      paramLabel = "URL",
      description = "The S3-compatible endpoint (MinIO, Ceph...); AWS S3 when not set")
  String artifactsS3Endpoint;

  @Option(
      names = "--artifacts-s3-region",
      paramLabel = "REGION",
      description = "The bucket's region (default us-east-1)")
  String artifactsS3Region = "us-east-1";

  @Option(
      names = "--artifacts-s3-prefix",
      paramLabel = "PREFIX",
      description =
          "Key prefix under which each run's outputs are kept, ending in / (default runs/)")
  String artifactsS3Prefix = "runs/";

  @Option(
      names = "--artifacts-retention",
      paramLabel = "AGE",
      description =
          "Delete a run's artifacts this long after it ended (12h, 30d, ...; checked on every"
              + " reaper pass, each deletion audited as agent_sandbox.artifacts.expired);"
              + " default: keep them")
  String artifactsRetention;

  @Option(
      names = "--jwt-keys",
      paramLabel = "FILE",
      description =
          "A JWK set of private signing keys (EC P-256 or RSA >= 2048, each with a kid, mode 0600)"
              + " for jwt run credentials; re-read when it changes")
  Path jwtKeys;

  @Option(
      names = "--jwt-active-kid",
      paramLabel = "KID",
      description = "The key in --jwt-keys that signs new tokens (older keys still verify)")
  String jwtActiveKid;

  @Option(
      names = "--jwt-issuer",
      paramLabel = "ISS",
      description = "The iss claim of run JWTs (default agent-sandbox)")
  String jwtIssuer = "agent-sandbox";

  @Option(
      names = "--credential-command",
      paramLabel = "NAME=PATH",
      description =
          "Registers an executable that mints a run credential (STS, Vault...), for agents' command"
              + " credentials to name; repeatable")
  List<String> credentialCommands = new ArrayList<>();

  @Option(
      names = "--credential-revoke-command",
      paramLabel = "NAME=PATH",
      description =
          "Registers an executable that revokes what the credential command NAME minted (the"
              + " value on its standard input) when the run's workload stops or the run is refused"
              + " after minting; repeatable. Without one, such a credential lives until its"
              + " expiry, and the run's rows say so")
  List<String> credentialRevokeCommands = new ArrayList<>();

  @Option(
      names = "--credential-command-timeout",
      paramLabel = "SECONDS",
      description = "How long a credential command may take before it is killed (default 30)")
  int credentialCommandTimeout = 30;

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
    WireLogs.silence();
    InetSocketAddress address =
        ListenAddress.parse(Setting.of(listen, "AGENT_SANDBOX_LISTEN", () -> "127.0.0.1:8080"));
    Path data =
        dataDir != null
            ? dataDir
            : Path.of(Setting.of(null, "AGENT_SANDBOX_DATA_DIR", () -> "data"));
    Optional<String> dataWarning = DataDirectory.prepare(data);
    Store opened = store.open();
    try {
      Optional<Path> tokenFile = FirstAdminToken.ensure(opened, data);
      // Every option is checked before any backend is built: the Docker backend starts filling
      // its proxy pool when it is made, and a start refused after that would leave the standbys
      // running until their deadline.
      var contract = RunContractOptions.config(this, data);
      RunWiring wiring = Backends.wiring(this, opened.identity(), out).withContract(contract);
      AgentSandboxServer server;
      try {
        server = AgentSandboxServer.start(address, opened, wiring);
      } catch (RuntimeException e) {
        wiring.closeBackends();
        throw e;
      }
      Path written = data.resolve(FirstAdminToken.FILE_NAME).toAbsolutePath();
      // The backends' probe lines come from their own threads, when each first probe answers.
      synchronized (out) {
        dataWarning.ifPresent(out::println);
        printStarted(out, opened, tokenFile, written, server);
      }
      Backends.reportProbes(server.probes(), out);
      return new Running(server, opened, tokenFile);
    } catch (RuntimeException e) {
      opened.close();
      throw e;
    }
  }

  private static void printStarted(
      PrintWriter out,
      Store opened,
      Optional<Path> tokenFile,
      Path written,
      AgentSandboxServer server) {
    if (tokenFile.isPresent()) {
      out.println(
          "first admin token (all scopes) written to "
              + written
              + " (readable only by you; export AGENT_SANDBOX_TOKEN=$(cat "
              + written
              + "))");
    } else if (Files.exists(written)) {
      // A second start creates no token; say again where the first one is.
      out.println("admin token: " + written + " (written on the first start, unless revoked)");
    }
    out.println("store: " + opened.dialect());
    out.println("listening on " + server.baseUrl());
    out.flush();
  }
}
