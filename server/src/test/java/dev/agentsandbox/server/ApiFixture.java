package dev.agentsandbox.server;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** A real store and a real server on an ephemeral loopback port, with tokens of each kind. */
final class ApiFixture implements AutoCloseable {
  final MutableClock clock = new MutableClock();
  final Store store;
  final AgentSandboxServer server;
  final ApiClient client;
  final List<String> secrets = new ArrayList<>();

  /** Holds every scope. */
  final String admin;

  /** Holds configure and read, not governance.weaken. */
  final String configurer;

  /** Holds read only. */
  final String reader;

  /** Holds audit.read only. */
  final String auditor;

  ApiFixture(String storeUrl) throws Exception {
    store = Store.open(storeUrl, clock);
    server =
        AgentSandboxServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store);
    client = new ApiClient(server.baseUrl());
    admin = token("admin-" + System.nanoTime(), Scopes.ALL);
    configurer = token("configurer-" + System.nanoTime(), Set.of(Scopes.CONFIGURE, Scopes.READ));
    reader = token("reader-" + System.nanoTime(), Set.of(Scopes.READ));
    auditor = token("auditor-" + System.nanoTime(), Set.of(Scopes.AUDIT_READ));
  }

  String token(String name, Set<String> scopes) {
    String secret = store.tokens().create(name, scopes, null).secret();
    secrets.add(secret);
    return secret;
  }

  @Override
  public void close() {
    server.close();
    store.close();
  }
}
