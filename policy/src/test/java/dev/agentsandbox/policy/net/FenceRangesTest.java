package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The fences' address lists come from the classifier's tables: the IPv4 fence refuses exactly what
 * the classifier calls non-public, the IPv6 fence refuses at least that, and neither holds a range
 * inside another (nftables refuses overlapping elements of an interval set).
 */
class FenceRangesTest {
  private static final int SAMPLES = 200_000;

  @Test
  void theIpv4FenceRefusesExactlyWhatTheClassifierCallsNonPublic() {
    Random random = new Random(4);
    for (byte[] address : samples(random, 4)) {
      boolean fenced = fenced(AddressClassifier.FENCE_V4, address);
      assertThat(fenced)
          .as(IpLiteral.format(IpLiteral.toAddress(address)))
          .isEqualTo(AddressClassifier.classify(address) != AddressClass.PUBLIC);
    }
  }

  @Test
  void theIpv6FenceRefusesEverythingNonPublicAndMoreOnlyWhereAnAddressIsEmbedded() {
    List<Cidr> embedding =
        List.of(
            Cidr.parse("::/96"),
            Cidr.parse("::ffff:0:0/96"),
            Cidr.parse("64:ff9b::/96"),
            Cidr.parse("2002::/16"));
    Random random = new Random(6);
    for (byte[] address : samples(random, 16)) {
      String text = IpLiteral.format(IpLiteral.toAddress(address));
      boolean fenced = fenced(AddressClassifier.FENCE_V6, address);
      if (AddressClassifier.classify(address) != AddressClass.PUBLIC) {
        assertThat(fenced).as(text + " is not public").isTrue();
      } else if (fenced) {
        assertThat(embedding.stream().anyMatch(c -> c.contains(address)))
            .as(text + " is public and fenced, so it must embed an IPv4 address")
            .isTrue();
      }
    }
    // Global unicast that embeds nothing stays open: the fence is not "refuse all of IPv6".
    assertThat(fenced(AddressClassifier.FENCE_V6, bytes("2606:4700::1111"))).isFalse();
    assertThat(fenced(AddressClassifier.FENCE_V6, bytes("2a00:1450:4001::1"))).isFalse();
  }

  @Test
  void noRangeLiesInsideAnotherAndTheyComeInAddressOrder() {
    for (List<Cidr> fence : List.of(AddressClassifier.FENCE_V4, AddressClassifier.FENCE_V6)) {
      for (int i = 0; i < fence.size(); i++) {
        for (int j = 0; j < fence.size(); j++) {
          if (i != j) {
            assertThat(fence.get(i).overlaps(fence.get(j)))
                .as(fence.get(i) + " and " + fence.get(j))
                .isFalse();
          }
        }
        if (i > 0) {
          assertThat(
                  Arrays.compareUnsigned(
                      fence.get(i - 1).network().getAddress(), fence.get(i).network().getAddress()))
              .isNegative();
        }
      }
    }
    assertThat(AddressClassifier.FENCE_V4).allMatch(c -> !c.isIpv6());
    assertThat(AddressClassifier.FENCE_V6).allMatch(Cidr::isIpv6);
  }

  @Test
  void theMetadataAddressesOutsideSpecialBlocksAreFencedToo() {
    // Azure's WireServer sits in public space; the classifier knows it, so the fence must too.
    assertThat(AddressClassifier.FENCE_V4).contains(Cidr.parse("168.63.129.16/32"));
    assertThat(fenced(AddressClassifier.FENCE_V4, bytes("168.63.129.17"))).isFalse();
  }

  /**
   * Random addresses, half of them drawn near the edges of the classifier's own blocks and the
   * fence's ranges (first and last address, one outside each end), where a wrong table shows.
   */
  private static List<byte[]> samples(Random random, int length) {
    List<byte[]> samples = new ArrayList<>();
    List<Cidr> edges =
        new ArrayList<>(length == 4 ? AddressClassifier.FENCE_V4 : AddressClassifier.FENCE_V6);
    for (Cidr range : edges) {
      byte[] first = range.network().getAddress();
      byte[] last = last(range);
      samples.add(first);
      samples.add(last);
      samples.add(step(first, -1));
      samples.add(step(last, 1));
    }
    for (InetAddress metadata : AddressClassifier.METADATA_ADDRESSES) {
      if (metadata.getAddress().length == length) {
        samples.add(metadata.getAddress());
      }
    }
    while (samples.size() < SAMPLES) {
      byte[] address = new byte[length];
      random.nextBytes(address);
      if (length == 16 && random.nextInt(4) == 0) {
        // A quarter of IPv6 samples embed an IPv4 address, where the tables are subtle.
        byte[] v4 = new byte[4];
        random.nextBytes(v4);
        switch (random.nextInt(4)) {
          case 0 -> address = embed(bytes("::ffff:0:0"), v4, 12);
          case 1 -> address = embed(bytes("64:ff9b::"), v4, 12);
          case 2 -> address = embed(bytes("2002::"), v4, 2);
          default -> address = embed(new byte[16], v4, 12);
        }
      } else if (length == 16 && random.nextInt(3) == 0) {
        address[0] = (byte) (0x20 | (address[0] & 0x1f)); // inside 2000::/3
      }
      samples.add(address);
    }
    return samples;
  }

  private static boolean fenced(List<Cidr> fence, byte[] address) {
    return fence.stream().anyMatch(c -> c.contains(address));
  }

  private static byte[] last(Cidr range) {
    byte[] bytes = range.network().getAddress();
    for (int bit = range.prefixLength(); bit < bytes.length * 8; bit++) {
      bytes[bit / 8] |= (byte) (0x80 >> (bit % 8));
    }
    return bytes;
  }

  /** The address plus {@code delta} (±1), wrapping at the ends of the family. */
  private static byte[] step(byte[] address, int delta) {
    byte[] bytes = address.clone();
    for (int i = bytes.length - 1; i >= 0; i--) {
      int value = (bytes[i] & 0xff) + delta;
      bytes[i] = (byte) value;
      if (value >= 0 && value <= 0xff) {
        break;
      }
    }
    return bytes;
  }

  private static byte[] embed(byte[] prefix, byte[] v4, int at) {
    byte[] address = prefix.clone();
    System.arraycopy(v4, 0, address, at, 4);
    return address;
  }

  private static byte[] bytes(String literal) {
    return IpLiteral.parseAddress(literal).getAddress();
  }
}
