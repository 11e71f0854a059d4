package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.net.Reason;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Framing, upgrade and target rules for plain HTTP, one row per case. */
class HttpMessagesTest {
  static Stream<Arguments> framing() {
    return Stream.of(
        Arguments.of("no body headers is fine", new String[] {}, null),
        Arguments.of("plain Content-Length is fine", new String[] {"Content-Length", "5"}, null),
        Arguments.of("chunked alone is fine", new String[] {"Transfer-Encoding", "chunked"}, null),
        Arguments.of(
            "both headers are ambiguous",
            new String[] {"Content-Length", "5", "Transfer-Encoding", "chunked"},
            "both"),
        Arguments.of("signed length", new String[] {"Content-Length", "+5"}, "plain decimal"),
        Arguments.of("negative length", new String[] {"Content-Length", "-1"}, "plain decimal"),
        Arguments.of("hex length", new String[] {"Content-Length", "0x5"}, "plain decimal"),
        Arguments.of("empty length", new String[] {"Content-Length", ""}, "plain decimal"),
        Arguments.of("conflicting list", new String[] {"Content-Length", "5, 6"}, "conflicting"),
        Arguments.of(
            "gzip then chunked",
            new String[] {"Transfer-Encoding", "gzip, chunked"},
            "single 'chunked'"),
        Arguments.of(
            "chunked twice",
            new String[] {"Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"},
            "single 'chunked'"),
        Arguments.of(
            "identity", new String[] {"Transfer-Encoding", "identity"}, "single 'chunked'"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void framing(String name, String[] headers, String problem) {
    HttpHeaders h = new DefaultHttpHeaders(false);
    for (int i = 0; i < headers.length; i += 2) {
      h.add(headers[i], headers[i + 1]);
    }
    String found = HttpMessages.framingProblem(h);
    if (problem == null) {
      assertThat(found).isNull();
    } else {
      assertThat(found).contains(problem);
    }
  }

  @Test
  void connectionNamedAndProxyHeadersAreStrippedOthersKept() {
    HttpHeaders h = new DefaultHttpHeaders();
    h.add("Connection", "keep-alive, X-Secret");
    h.add("X-Secret", "1");
    h.add("Proxy-Authorization", "Basic x");
    h.add("Keep-Alive", "timeout=5");
    h.add("Transfer-Encoding", "chunked");
    h.add("X-Kept", "yes");
    HttpMessages.stripHopByHop(h);
    assertThat(h.names()).containsExactlyInAnyOrder("Transfer-Encoding", "X-Kept");
  }

  static Stream<Arguments> targets() {
    return Stream.of(
        Arguments.of(
            "absolute form with port", "http://api.test:8080/a?b", "api.test", "/a?b", null),
        Arguments.of("absolute form without path", "http://api.test", "api.test", "/", null),
        Arguments.of("query without path", "http://api.test?x=1", "api.test", "/?x=1", null),
        Arguments.of("fragment is dropped", "http://api.test/p#frag", "api.test", "/p", null),
        Arguments.of("scheme in capitals", "HTTP://api.test/", "api.test", "/", null),
        Arguments.of("origin form", "/path", null, null, Reason.BAD_REQUEST),
        Arguments.of("asterisk form", "*", null, null, Reason.BAD_REQUEST),
        Arguments.of(
            "https goes through CONNECT", "https://api.test/", null, null, Reason.BAD_REQUEST),
        Arguments.of("userinfo", "http://u:p@api.test/", null, null, Reason.INVALID_TARGET));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void targets(String name, String uri, String host, String originForm, Reason problem) {
    AbsoluteTarget target = AbsoluteTarget.parse(uri);
    if (problem != null) {
      assertThat(target.problemReason()).isEqualTo(problem);
      return;
    }
    assertThat(target.problem()).isNull();
    assertThat(target.host()).isEqualTo(host);
    assertThat(target.originForm()).isEqualTo(originForm);
  }
}
