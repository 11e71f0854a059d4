package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.net.IpLiteral;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The hosts-file resolver used by tests and air-gapped sites. */
class StaticHostResolverTest {
  @TempDir Path temp;

  @Test
  void namesAreCanonicalizedAndAddressesCollectedInFileOrder() throws Exception {
    Path file = temp.resolve("hosts");
    Files.writeString(
        file,
        "# comment\n127.0.0.2  API.Test. alias.test\n\n127.0.0.3 api.test # second address\n::1 six.test\n");
    var table = StaticHostResolver.parseHostsFile(file);
    assertThat(table.get("api.test"))
        .extracting(IpLiteral::format)
        .containsExactly("127.0.0.2", "127.0.0.3");
    assertThat(table.get("alias.test")).extracting(IpLiteral::format).containsExactly("127.0.0.2");
    assertThat(table.get("six.test")).extracting(IpLiteral::format).containsExactly("::1");
  }

  @Test
  void aNameThatIsAnAddressIsRefused() throws Exception {
    Path file = temp.resolve("hosts");
    Files.writeString(file, "127.0.0.2 127.0.0.9\n");
    assertThatThrownBy(() -> StaticHostResolver.parseHostsFile(file))
        .isInstanceOf(InvalidProxyConfigException.class)
        .hasMessageContaining("IP addresses are refused");
  }
}
