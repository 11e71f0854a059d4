package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.store.internal.CanonicalJson;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The one text form the audit hash is computed over. */
class CanonicalJsonTest {

  static Stream<Arguments> forms() {
    return Stream.of(
        Arguments.of("keys are sorted", "{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}"),
        Arguments.of(
            "nested keys are sorted",
            "{\"x\":{\"z\":1,\"y\":{\"d\":0,\"c\":0}}}",
            "{\"x\":{\"y\":{\"c\":0,\"d\":0},\"z\":1}}"),
        Arguments.of(
            "objects inside arrays are sorted, array order is kept",
            "[3,{\"b\":1,\"a\":2},1]",
            "[3,{\"a\":2,\"b\":1},1]"),
        Arguments.of("whitespace is removed", "{ \"a\" : [ 1 , 2 ] }", "{\"a\":[1,2]}"),
        Arguments.of(
            "keys sort by code point, upper case first", "{\"a\":1,\"B\":2}", "{\"B\":2,\"a\":1}"),
        Arguments.of("null document is the literal null", "null", "null"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("forms")
  void canonicalForm(String name, String input, String expected) throws Exception {
    assertThat(CanonicalJson.write(StoreTestBase.JSON.readTree(input))).isEqualTo(expected);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("forms")
  void canonicalFormIsAFixedPoint(String name, String input, String expected) {
    assertThat(CanonicalJson.write(CanonicalJson.read(expected))).isEqualTo(expected);
  }
}
