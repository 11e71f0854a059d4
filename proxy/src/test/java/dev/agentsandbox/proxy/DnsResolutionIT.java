package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.ProxyPolicy;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.policy.net.Reason;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.handler.codec.dns.DatagramDnsQuery;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponse;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import io.netty.handler.codec.dns.DefaultDnsRawRecord;
import io.netty.handler.codec.dns.DnsQuestion;
import io.netty.handler.codec.dns.DnsRecordType;
import io.netty.handler.codec.dns.DnsResponseCode;
import io.netty.handler.codec.dns.DnsSection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy as a run gets it when the operator names no static hosts (the default): its policy
 * document built by {@link ProxyPolicy#forRun} with an empty hosts table, read back by the proxy,
 * names resolved by DNS. The name server is the test's own, on loopback, so every answer is known:
 * an allowed name is fetched at the address DNS gave, a non-public answer is refused, a name that
 * does not exist fails, and a name the allow-list refuses is never asked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DnsResolutionIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Fixture fixture;
  private LoopbackNameServer dns;
  private RecordingListener decisions;
  private RunningProxy proxy;

  @BeforeAll
  void start(@TempDir Path temp) throws Exception {
    fixture = new Fixture();
    dns =
        new LoopbackNameServer(
            Map.of(
                "api.test", Fixture.PERMITTED,
                "metadata.test", "169.254.169.254",
                "trap.test", Fixture.REFUSED));
    RunEgress egress =
        new RunEgress(
            AllowList.parse(
                List.of(
                    "api.test:" + fixture.port,
                    "metadata.test:" + fixture.port,
                    "trap.test:" + fixture.port,
                    "ghost.test:" + fixture.port)),
            Optional.empty(),
            List.of(
                InternalDestination.range(
                    "upstreams",
                    Cidr.parse(Fixture.PERMITTED + "/32"),
                    new TreeSet<>(List.of(fixture.port)))),
            Map.of());
    ProxyPolicy forRun = ProxyPolicy.forRun(egress, "run-dns", 0);
    ProxyPolicy policy =
        new ProxyPolicy(
            "127.0.0.1:0",
            forRun.allow(),
            forRun.instanceAllow(),
            forRun.internal(),
            forRun.hosts(),
            Optional.of("127.0.0.1:" + dns.port()),
            forRun.runId(),
            Optional.empty(),
            forRun.metrics(),
            forRun.limits());
    Path file = temp.resolve("policy.json");
    Files.writeString(file, JSON.writeValueAsString(policy.toTree()));
    decisions = new RecordingListener();
    proxy = RunningProxy.start(ProxyConfigs.fromPolicyFile(file), List.of(decisions));
  }

  @AfterAll
  void stop() throws Exception {
    if (proxy != null) {
      proxy.close();
    }
    if (dns != null) {
      dns.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  @Test
  void anAllowedNameIsFetchedAtTheAddressDnsGave() throws Exception {
    String output = curl("http://api.test:" + fixture.port + "/by-dns");
    assertThat(output).startsWith("HTTP/1.1 200").contains("hello from api");
    assertThat(decisions.await(r -> r.host().equals("api.test") && r.allowed()).address())
        .isEqualTo(Fixture.PERMITTED);
    // Asked as an absolute name: no search domain was tried first.
    assertThat(dns.asked()).contains("api.test.");
  }

  @Test
  void aMetadataAnswerIsRefused() throws Exception {
    assertThat(curl("http://metadata.test:" + fixture.port + "/")).startsWith("HTTP/1.1 403");
    assertThat(decisions.await(r -> r.host().equals("metadata.test")).allowed()).isFalse();
  }

  @Test
  void aLoopbackAnswerOutsideTheInternalRangeIsRefusedAndNeverDialled() throws Exception {
    int trapSeen = fixture.trap.seen().size();
    assertThat(curl("http://trap.test:" + fixture.port + "/")).startsWith("HTTP/1.1 403");
    assertThat(decisions.await(r -> r.host().equals("trap.test")).allowed()).isFalse();
    assertThat(fixture.trap.seen()).hasSize(trapSeen);
  }

  @Test
  void aNameThatDoesNotExistFailsAsADnsFailure() throws Exception {
    assertThat(curl("http://ghost.test:" + fixture.port + "/")).doesNotStartWith("HTTP/1.1 200");
    assertThat(decisions.await(r -> r.host().equals("ghost.test")).reason())
        .isEqualTo(Reason.DNS_FAILURE);
  }

  @Test
  void aNameTheAllowListRefusesIsNeverAsked() throws Exception {
    assertThat(curl("http://elsewhere.test:" + fixture.port + "/")).startsWith("HTTP/1.1 403");
    assertThat(decisions.await(r -> r.host().equals("elsewhere.test")).allowed()).isFalse();
    assertThat(dns.asked()).noneMatch(name -> name.startsWith("elsewhere.test"));
  }

  private String curl(String url) throws Exception {
    Process process =
        new ProcessBuilder(
                Curl.path(),
                "-sS",
                "-i",
                "--max-time",
                "20",
                "-x",
                "http://127.0.0.1:" + proxy.address().getPort(),
                url)
            .redirectErrorStream(true)
            .start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return output;
  }

  /** A name server on 127.0.0.1 answering A queries from a fixed table; NXDOMAIN otherwise. */
  private static final class LoopbackNameServer implements AutoCloseable {
    private final EventLoopGroup group =
        new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final List<String> asked = new CopyOnWriteArrayList<>();
    private final Channel channel;

    LoopbackNameServer(Map<String, String> table) throws InterruptedException {
      channel =
          new Bootstrap()
              .group(group)
              .channel(NioDatagramChannel.class)
              .handler(
                  new ChannelInitializer<DatagramChannel>() {
                    @Override
                    protected void initChannel(DatagramChannel ch) {
                      ch.pipeline()
                          .addLast(
                              new DatagramDnsQueryDecoder(),
                              new DatagramDnsResponseEncoder(),
                              new Answerer(table, asked));
                    }
                  })
              .bind(new InetSocketAddress("127.0.0.1", 0))
              .sync()
              .channel();
    }

    int port() {
      return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    List<String> asked() {
      return new ArrayList<>(asked);
    }

    @Override
    public void close() throws InterruptedException {
      channel.close().sync();
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
  }

  private static final class Answerer extends SimpleChannelInboundHandler<DatagramDnsQuery> {
    private final Map<String, String> table;
    private final List<String> asked;

    Answerer(Map<String, String> table, List<String> asked) {
      this.table = table;
      this.asked = asked;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, DatagramDnsQuery query)
        throws Exception {
      DnsQuestion question = query.recordAt(DnsSection.QUESTION);
      String name = question.name();
      asked.add(name);
      DatagramDnsResponse response =
          new DatagramDnsResponse(query.recipient(), query.sender(), query.id());
      response.addRecord(DnsSection.QUESTION, question);
      String address = table.get(name.endsWith(".") ? name.substring(0, name.length() - 1) : name);
      if (address == null) {
        response.setCode(DnsResponseCode.NXDOMAIN);
      } else if (question.type() == DnsRecordType.A) {
        response.addRecord(
            DnsSection.ANSWER,
            new DefaultDnsRawRecord(
                name,
                DnsRecordType.A,
                60,
                Unpooled.wrappedBuffer(InetAddress.getByName(address).getAddress())));
      }
      ctx.writeAndFlush(response);
    }
  }
}
