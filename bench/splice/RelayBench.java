import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.AbstractEpollStreamChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollMode;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One loopback stream relayed between two sockets by a one-thread Netty event loop, three ways:
 * a ByteBuf relay on the epoll transport, epoll's (deprecated) {@code spliceTo}, and a ByteBuf
 * relay on NIO; plus the stream without a relay as the baseline. Rounds alternate the modes; each
 * measurement moves the same number of bytes and reads the relay thread's CPU time. Loopback only
 * (127.0.0.1). Run by bench/relay-bench.sh; see docs/benchmarks.md ("Relay: lean vs splice").
 */
@SuppressWarnings("deprecation") // spliceTo and EpollMode: deprecated, and what is measured
public final class RelayBench {
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    long bytes = (args.length > 1 ? Long.parseLong(args[1]) : 2048) * 1024 * 1024;
    List<String> modes =
        args.length > 2
            ? Arrays.asList(args[2].split(","))
            : List.of("direct", "epoll-bytebuf", "epoll-splice", "nio-bytebuf");
    if (!Epoll.isAvailable()) {
      throw new IllegalStateException("epoll is not available: " + Epoll.unavailabilityCause());
    }
    if (rounds < 1 || rounds > 50 || bytes < 1) {
      throw new IllegalArgumentException("rounds 1-50, MiB >= 1");
    }
    ServerSocket source = new ServerSocket(0, 64, LOOPBACK);
    Thread.ofPlatform().daemon().name("source").start(() -> serve(source));
    Map<String, List<double[]>> results = new LinkedHashMap<>();
    for (int round = 0; round < rounds; round++) {
      for (String mode : modes) {
        double[] r = measure(mode, source.getLocalPort(), bytes);
        results.computeIfAbsent(mode, k -> new ArrayList<>()).add(r);
        System.out.printf(
            "round %d %-14s %8.1f MB/s  relay CPU %.3f s/GB  load %s%n",
            round, mode, r[0], r[1], loadAverage());
      }
    }
    System.out.println("medians over " + rounds + " rounds of " + bytes / 1024 / 1024 + " MiB:");
    for (Map.Entry<String, List<double[]>> e : results.entrySet()) {
      System.out.printf(
          "%-14s %8.1f MB/s  relay CPU %.3f s/GB%n",
          e.getKey(), median(e.getValue(), 0), median(e.getValue(), 1));
    }
    System.exit(0);
  }

  private static double[] measure(String mode, int sourcePort, long bytes) throws Exception {
    if (mode.equals("direct")) {
      try (Socket socket = new Socket(LOOPBACK, sourcePort)) {
        long nanos = drain(socket, bytes);
        return new double[] {bytes / 1e6 / (nanos / 1e9), 0};
      }
    }
    boolean epoll = mode.startsWith("epoll");
    boolean splice = mode.equals("epoll-splice");
    if (!epoll && !mode.equals("nio-bytebuf")) {
      throw new IllegalArgumentException("unknown mode " + mode);
    }
    Thread[] loopThread = new Thread[1];
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    EventLoopGroup group =
        new MultiThreadIoEventLoopGroup(
            1,
            runnable -> {
              Thread t = new Thread(runnable, "relay-loop");
              t.setDaemon(true);
              loopThread[0] = t;
              return t;
            },
            io);
    try {
      ServerBootstrap server =
          new ServerBootstrap()
              .group(group)
              .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
              .childOption(ChannelOption.AUTO_READ, false)
              .childOption(ChannelOption.TCP_NODELAY, true)
              .childOption(
                  ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(8192, 32768))
              .childHandler(
                  new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel client) {
                      dialUpstream(client, sourcePort, epoll, splice);
                    }
                  });
      if (splice) {
        server.childOption(EpollChannelOption.EPOLL_MODE, EpollMode.EDGE_TRIGGERED);
      }
      Channel listener = server.bind(new InetSocketAddress(LOOPBACK, 0)).sync().channel();
      int port = ((InetSocketAddress) listener.localAddress()).getPort();
      try (Socket socket = new Socket(LOOPBACK, port)) {
        drain(socket, 64L * 1024 * 1024); // warm-up, not timed
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpuBefore = threads.getThreadCpuTime(loopThread[0].threadId());
        long nanos = drain(socket, bytes);
        long cpu = threads.getThreadCpuTime(loopThread[0].threadId()) - cpuBefore;
        return new double[] {bytes / 1e6 / (nanos / 1e9), cpu / 1e9 / (bytes / 1e9)};
      } finally {
        listener.close().sync();
      }
    } finally {
      group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
    }
  }

  private static void dialUpstream(Channel client, int sourcePort, boolean epoll, boolean splice) {
    Bootstrap b =
        new Bootstrap()
            .group(client.eventLoop())
            .channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
            .option(ChannelOption.AUTO_READ, false)
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(8192, 32768))
            .handler(new ChannelInboundHandlerAdapter());
    if (splice) {
      b.option(EpollChannelOption.EPOLL_MODE, EpollMode.EDGE_TRIGGERED);
    }
    b.connect(new InetSocketAddress(LOOPBACK, sourcePort))
        .addListener(
            f -> {
              Channel upstream = ((io.netty.channel.ChannelFuture) f).channel();
              if (!f.isSuccess()) {
                client.close();
                return;
              }
              upstream.closeFuture().addListener(x -> client.close());
              for (Channel c : List.of(upstream, client)) {
                c.pipeline().addLast(new Quiet());
              }
              client.closeFuture().addListener(x -> upstream.close());
              if (splice) {
                AbstractEpollStreamChannel up = (AbstractEpollStreamChannel) upstream;
                AbstractEpollStreamChannel down = (AbstractEpollStreamChannel) client;
                up.spliceTo(down, Integer.MAX_VALUE);
                down.spliceTo(up, Integer.MAX_VALUE);
              } else {
                upstream.pipeline().addLast(new Pump(client));
                client.pipeline().addLast(new Pump(upstream));
              }
              upstream.config().setAutoRead(true);
              client.config().setAutoRead(true);
            });
  }

  /** Copies this channel's bytes into {@code peer}; stops reading while the peer is not writable. */
  private static final class Pump extends ChannelInboundHandlerAdapter {
    private final Channel peer;

    Pump(Channel peer) {
      this.peer = peer;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      peer.pipeline().addLast(new ResumeOnWritable(ctx.channel()));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      peer.write(msg, peer.voidPromise());
      if (!peer.isWritable()) {
        peer.flush();
        if (!peer.isWritable()) {
          ctx.channel().config().setAutoRead(false);
        }
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      peer.flush();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close(); // the reader closing its end after a measurement: a broken pipe, expected
    }
  }

  /** Closes on an exception (the reader's end closing after a measurement) instead of logging. */
  private static final class Quiet extends ChannelInboundHandlerAdapter {
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }

  private static final class ResumeOnWritable extends ChannelInboundHandlerAdapter {
    private final Channel source;

    ResumeOnWritable(Channel source) {
      this.source = source;
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      if (ctx.channel().isWritable()) {
        source.config().setAutoRead(true);
      }
      ctx.fireChannelWritabilityChanged();
    }
  }

  private static long drain(Socket socket, long bytes) throws IOException {
    InputStream in = socket.getInputStream();
    byte[] buffer = new byte[64 * 1024];
    long left = bytes;
    long begin = System.nanoTime();
    while (left > 0) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
      if (n < 0) {
        throw new IOException("stream ended early");
      }
      left -= n;
    }
    return System.nanoTime() - begin;
  }

  private static void serve(ServerSocket server) {
    while (true) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        return;
      }
      Thread.ofPlatform()
          .daemon()
          .name("source-writer")
          .start(
              () -> {
                byte[] chunk = new byte[256 * 1024];
                try (s;
                    OutputStream out = s.getOutputStream()) {
                  while (true) {
                    out.write(chunk);
                  }
                } catch (IOException closed) {
                  // the reader is done
                }
              });
    }
  }

  private static double median(List<double[]> rows, int column) {
    double[] v = rows.stream().mapToDouble(r -> r[column]).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static String loadAverage() throws IOException {
    String load = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"));
    return String.join(" ", Arrays.copyOf(load.trim().split(" "), 3));
  }
}
