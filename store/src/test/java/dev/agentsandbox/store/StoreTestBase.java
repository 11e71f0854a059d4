package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Opens a store on a fresh fixture before each test; subclasses pick the dialect. */
abstract class StoreTestBase {

  static final ObjectMapper JSON = new ObjectMapper();
  static final Instant START = Instant.parse("2026-03-01T10:00:00.123Z");

  StoreFixture fixture;
  TestClock clock;
  Store store;

  abstract StoreFixture newFixture() throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    fixture = newFixture();
    clock = new TestClock(START);
    store = Store.open(fixture.url(), clock);
  }

  @AfterEach
  void closeStore() throws Exception {
    if (store != null) {
      store.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      throw new IllegalArgumentException(text, e);
    }
  }
}
