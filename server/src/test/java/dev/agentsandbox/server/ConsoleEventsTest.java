package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.event.EventType;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The console names audit row types only through its generated {@code events.js}: no script types
 * one as a string, every {@code EVENTS.X} it uses is one the vocabulary has, and the generated
 * script carries every run event type.
 */
class ConsoleEventsTest {
  private static final Pattern TYPED = Pattern.compile("[\"'`]agent_sandbox\\.[a-z_.]*[\"'`]");
  private static final Pattern USED = Pattern.compile("\\bEVENTS\\.([A-Z_]+)");

  @Test
  void noScriptTypesARowTypeAndEveryOneItUsesExists() throws IOException {
    List<String> typed = new ArrayList<>();
    List<String> unknown = new ArrayList<>();
    int scripts = 0;
    for (String name : read("assets.txt").split("\n")) {
      if (!name.strip().endsWith(".js")) {
        continue;
      }
      scripts++;
      String script = read(name.strip());
      Matcher literal = TYPED.matcher(script);
      while (literal.find()) {
        typed.add(name.strip() + ": " + literal.group());
      }
      Matcher used = USED.matcher(script);
      while (used.find()) {
        if (!ConsoleEvents.types().containsKey(used.group(1))) {
          unknown.add(name.strip() + ": EVENTS." + used.group(1));
        }
      }
    }
    assertThat(scripts).isGreaterThan(10);
    assertThat(typed).as("row types typed into a script (use EVENTS from events.js)").isEmpty();
    assertThat(unknown).as("EVENTS names the vocabulary does not have").isEmpty();
  }

  @Test
  void theGeneratedScriptNamesEveryRunEventAndItsGroups() {
    String script = ConsoleEvents.script();
    for (EventType type : EventType.values()) {
      assertThat(script).contains(type.name() + ": \"" + type.wireName() + "\"");
    }
    assertThat(ConsoleEvents.prefixes())
        .contains("agent_sandbox.egress", "agent_sandbox.config", "agent_sandbox.egress.deny")
        .doesNotContain("agent_sandbox");
  }

  private static String read(String name) throws IOException {
    try (InputStream in = ConsoleEventsTest.class.getResourceAsStream("/console/" + name)) {
      assertThat(in).as("console/" + name).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
