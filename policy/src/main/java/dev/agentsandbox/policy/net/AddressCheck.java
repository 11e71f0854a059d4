package dev.agentsandbox.policy.net;

import java.net.InetAddress;

/**
 * The verdict on one resolved address.
 *
 * @param address the address that was checked (and, when permitted, is the one to dial)
 * @param addressClass what kind of destination it is ({@link AddressClass#PROXY_HOST} or {@link
 *     AddressClass#PROXY_LISTENER} when it is the proxy itself)
 * @param permitted whether the proxy may connect to it
 * @param internal whether it was permitted because an operator declared it internal
 */
public record AddressCheck(
    InetAddress address, AddressClass addressClass, boolean permitted, boolean internal) {
  public AddressCheck {
    if (address == null || addressClass == null) {
      throw new IllegalArgumentException("address and class are required");
    }
    if (internal && !permitted) {
      throw new IllegalArgumentException("an internal address is a permitted one");
    }
  }
}
