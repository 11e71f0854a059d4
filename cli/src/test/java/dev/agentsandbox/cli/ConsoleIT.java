package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.File;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The operator console end to end: the packaged jar's {@code serve} with the real Docker backend,
 * driven in Debian's headless Chromium through its chromedriver, one browser session. Signs in, has
 * a loosening refused for a token without {@code governance.weaken} and saved by one with it and a
 * reason, meets a version conflict, shows a plan, starts a run whose output streams while it runs
 * and whose egress table shows a denial, kills it, downloads the file it left in {@code
 * /workspace/out}, reads its timeline, has the run's refusal proposed as an entry and previews it
 * with its impact, and reads the audit filtered to that run and to its label. Writes a 1280×800
 * screenshot of each page to {@code target/console-screenshots/}.
 */
class ConsoleIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final Path SHOTS = Path.of("target", "console-screenshots");
  private static final Duration WAIT = Duration.ofSeconds(90);

  /** What the run writes to {@code /workspace/out/result.json}, byte for byte. */
  private static final String RESULT = "{\"from\": \"console-it\", \"answer\": 42}\n";

  private static Process serve;
  private static Path data;
  private static String base;

  /** The test's own requests to the admin API, each checked against openapi.json. */
  private static ApiClient client;

  private static String admin;
  private static String operator;

  /** Holds read and run, limited to the agent planner (runs of helper are not its to see). */
  private static String planners;

  private static ChromeDriver browser;
  private static Path downloads;
  private static final List<String> runIds = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    Path jar = Path.of("target", "agent-sandbox.jar");
    assertThat(jar).as("the packaged CLI jar (failsafe runs after package)").exists();
    for (String binary : List.of("/usr/bin/chromium", "/usr/bin/chromedriver")) {
      if (!Files.isExecutable(Path.of(binary))) {
        fail(
            "ConsoleIT needs "
                + binary
                + " (Debian's chromium and chromium-driver; scripts/test.sh installs them)");
      }
    }
    data = Files.createTempDirectory("asb-console-it");
    String db = "jdbc:sqlite:" + data.resolve("store.db");
    serve =
        new ProcessBuilder(
                java(),
                "-jar",
                jar.toString(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                db,
                "--data-dir",
                data.toString(),
                "--instance-id",
                "console-it-" + ProcessHandle.current().pid())
            .redirectErrorStream(true)
            .start();
    base = CliProcess.awaitListening(serve);
    client = new ApiClient(base, Duration.ofSeconds(60));
    admin = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
    operator =
        createToken(
            jar,
            db,
            "operator",
            "agent_sandbox.read,agent_sandbox.configure,agent_sandbox.run,audit.read");
    planners =
        createToken(
            jar, db, "planners", "agent_sandbox.read,agent_sandbox.run", "--agents", "planner");
    JsonNode put =
        api(
            "PUT",
            CONFIG,
            admin,
            "{\"enabled\": true, \"backend\": \"docker\", \"reason\": \"ConsoleIT setup\","
                + " \"agents\": {\"helper\": {\"allow\": [\"allowed.test\"],"
                + " \"image\": \"agent-sandbox/workload:dev\", \"ttl_seconds\": 300,"
                + " \"resources\": {\"cpus\": 1, \"memory_mb\": 256, \"pids\": 128}}}}",
            "\"0\"");
    assertThat(put.path("version").asLong()).as(put.toString()).isEqualTo(1);

    Files.createDirectories(SHOTS);
    ChromeOptions options = new ChromeOptions();
    options.setBinary("/usr/bin/chromium");
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,800",
        "--user-data-dir=" + Files.createTempDirectory("asb-console-chromium"));
    // Downloads (an artifact, the audit export) land here, where the test reads them back.
    downloads = Files.createTempDirectory("asb-console-downloads");
    options.setExperimentalOption(
        "prefs",
        Map.of(
            "download.default_directory",
            downloads.toString(),
            "download.prompt_for_download",
            false));
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, java.util.logging.Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(new File("/usr/bin/chromedriver"))
            .usingAnyFreePort()
            .build();
    browser = new ChromeDriver(service, options);
    // The screenshots are of the page at 1280×800, so the window is grown by its own frame.
    browser.manage().window().setSize(new Dimension(1280, 800));
    @SuppressWarnings("unchecked")
    List<Number> inner = (List<Number>) script("return [window.innerWidth, window.innerHeight]");
    browser
        .manage()
        .window()
        .setSize(
            new Dimension(2 * 1280 - inner.get(0).intValue(), 2 * 800 - inner.get(1).intValue()));
  }

  @AfterAll
  static void stop() throws Exception {
    if (browser != null) {
      browser.quit();
    }
    if (serve != null && serve.isAlive()) {
      serve.destroy(); // SIGTERM: serve kills and tears down its live runs before it exits
      serve.waitFor(60, TimeUnit.SECONDS);
    }
    DockerClient docker = DockerClients.fromEnvironment();
    for (String runId : runIds) {
      assertThat(DockerObjects.ofRun(docker, runId)).as("left by run " + runId).isEmpty();
    }
  }

  @Test
  void anOperatorSignsInIsRefusedALooseningPlansRunsWatchesKillsAndAudits() throws Exception {
    try {
      drive();
    } catch (AssertionError | RuntimeException e) {
      // What the browser saw, for whoever reads the failure.
      shot("failure");
      browser
          .manage()
          .logs()
          .get(LogType.BROWSER)
          .forEach(entry -> System.out.println("browser: " + entry));
      System.out.println("page: " + browser.getPageSource());
      throw e;
    }
  }

  private void drive() throws Exception {
    // Sign in: the token lands in sessionStorage, never in the URL or a cookie.
    browser.get(base + "/");
    shot("signin");
    signIn(operator);
    waitFor(By.cssSelector("[data-page=overview]"));
    assertThat(browser.getCurrentUrl()).doesNotContain(operator);
    assertThat(browser.manage().getCookies()).isEmpty();
    assertThat(script("return sessionStorage.getItem('agent-sandbox.token')")).isEqualTo(operator);
    waitUntil(() -> find(By.id("who-name")).getText().equals("Signed in as operator"));
    assertThat(find(By.id("who-agents")).getText()).contains("every agent");

    // A loosening previewed by a token without governance.weaken: listed, refused, not savable.
    open("config");
    WebElement text = waitFor(By.id("config-text"));
    waitUntil(() -> text.getDomProperty("value").contains("allowed.test"));
    replaceText(
        text,
        text.getDomProperty("value")
            .replace("\"allowed.test\"", "\"allowed.test\", \"docs.example.org\""));
    click(By.id("config-preview"));
    WebElement refusal = waitFor(By.id("config-refusal"));
    assertThat(refusal.getText()).contains("governance.weaken");
    assertThat(find(By.id("config-loosenings")).getText()).contains("allow_entry_added");
    assertThat(find(By.cssSelector("table.diff")).getText()).contains("docs.example.org");
    assertThat(find(By.id("config-save")).isEnabled()).isFalse();
    shot("config-refused");
    assertThat(api("GET", CONFIG, admin, null, null).path("version").asLong()).isEqualTo(1);

    // The same change by a token that holds governance.weaken: savable only with a reason.
    signOut();
    signIn(admin);
    open("config");
    WebElement adminText = waitFor(By.id("config-text"));
    waitUntil(() -> adminText.getDomProperty("value").contains("allowed.test"));
    replaceText(
        adminText,
        adminText
            .getDomProperty("value")
            .replace("\"allowed.test\"", "\"allowed.test\", \"docs.example.org\""));
    click(By.id("config-preview"));
    waitUntil(() -> find(By.id("config-loosenings")).getAttribute("data-loosenings").equals("1"));
    assertThat(find(By.id("config-save")).isEnabled()).as("no reason yet").isFalse();
    find(By.id("config-reason")).sendKeys("CHG-2051 docs mirror");
    waitUntil(() -> find(By.id("config-save")).isEnabled());
    shot("config");
    click(By.id("config-save"));
    assertThat(waitFor(By.id("config-saved")).getText()).contains("Saved version 2", "CHG-2051");
    JsonNode saved = api("GET", CONFIG, admin, null, null);
    assertThat(saved.path("version").asLong()).isEqualTo(2);
    assertThat(saved.path("agents").path("helper").path("allow").toString())
        .contains("docs.example.org");

    // Someone saves in between: the preview shows a version conflict and the newer version.
    WebElement again = waitFor(By.id("config-text"));
    replaceText(
        again,
        again.getDomProperty("value").replace("\"ttl_seconds\": 300", "\"ttl_seconds\": 200"));
    ObjectNode newer = (ObjectNode) api("GET", CONFIG, admin, null, null);
    for (String computed : List.of("version", "updated_at", "updated_by")) {
      newer.remove(computed);
    }
    ObjectNode helper = (ObjectNode) newer.path("agents").path("helper");
    helper.remove("effective_allow");
    ((ObjectNode) helper.path("resources")).put("cpus", 0.5);
    api("PUT", CONFIG, admin, JSON.writeValueAsString(newer), "\"2\"");
    click(By.id("config-preview"));
    assertThat(waitFor(By.id("config-conflict")).getText())
        .contains("Version conflict", "version 2", "version 3");
    shot("config-conflict");

    // A plan: every object as a list and as YAML.
    open("plan");
    WebElement agent = waitFor(By.id("plan-agent"));
    waitUntil(() -> "helper".equals(agent.getDomProperty("value")));
    click(By.id("plan-submit"));
    WebElement yaml = waitFor(By.id("plan-yaml"));
    assertThat(yaml.getText()).contains("manifests:", "backend: \"docker\"", "docs.example.org");
    assertThat(browser.findElements(By.cssSelector("#plan-result tbody tr")))
        .hasSizeGreaterThanOrEqualTo(3);
    shot("plan");

    // A run: output streams while it runs, its denial shows in the egress table, and it is killed.
    open("runs");
    WebElement runAgent = waitFor(By.id("run-agent"));
    waitUntil(() -> "helper".equals(runAgent.getDomProperty("value")));
    find(By.id("run-command"))
        .sendKeys(
            "sh -c 'echo started; printf \"{\\\"from\\\": \\\"console-it\\\","
                + " \\\"answer\\\": 42}\\n\" > /workspace/out/result.json;"
                + " curl -sS -m 10 -o /dev/null -w \"denied=%{http_code}\\n\""
                + " http://denied.test/; i=0; while [ $i -lt 240 ]; do echo tick $i;"
                + " i=$((i+1)); sleep 1; done'");
    find(By.id("run-labels")).sendKeys("owner=alice, task-ref=CONSOLE-14");
    click(By.id("run-start"));
    waitUntil(() -> browser.getCurrentUrl().matches(".*#/runs/[a-z0-9]{20}$"));
    String runId = browser.getCurrentUrl().replaceAll(".*#/runs/", "");
    runIds.add(runId);
    WebElement output = waitFor(By.id("run-output"));
    waitUntil(() -> output.getText().contains("denied=403") && output.getText().contains("tick 2"));
    assertThat(find(By.cssSelector("#run-state dl")).getAttribute("data-status"))
        .as("the output arrived while the run was still running")
        .isEqualTo("running");
    waitUntil(() -> find(By.id("run-egress")).getText().contains("denied.test"));
    WebElement denial = find(By.cssSelector("#run-egress tr.deny"));
    assertThat(denial.getText()).contains("deny", "denied.test");
    shot("run");

    // A crafted link whose fragment decodes to a path that reaches this run from another id
    // (#/runs/x%2F..%2FID showed "Run x/../ID" and its Kill button killed ID): refused as no run
    // id, no Kill button, and the run lives on.
    open("runs/x%2F..%2F" + runId);
    WebElement invalid = waitFor(By.id("run-invalid"));
    assertThat(invalid.getText()).contains("x/../" + runId, "is not a run id");
    assertThat(browser.findElements(By.id("run-kill"))).as("a Kill button").isEmpty();
    shot("run-not-a-run");
    assertThat(api("GET", CONFIG + "/runs/" + runId, admin, null, null).path("status").asText())
        .as("the run the crafted link aimed at")
        .isEqualTo("running");

    open("runs/" + runId);
    waitUntil(() -> find(By.id("run-kill")).isDisplayed());
    click(By.id("run-kill"));
    waitUntil(
        () -> "killed".equals(find(By.cssSelector("#run-state dl")).getAttribute("data-status")));
    waitUntil(() -> "true".equals(find(By.id("run-output")).getAttribute("data-ended")));

    // Its artifact, listed with its size and hash, and downloaded with the bearer header: the
    // browser saves exactly the bytes the workload wrote.
    byte[] expected = RESULT.getBytes(StandardCharsets.UTF_8);
    String expectedHash = sha256(expected);
    WebElement artifact = waitFor(By.cssSelector("#run-artifacts tr[data-path='result.json']"));
    assertThat(artifact.getText()).contains(expectedHash, expected.length + " B");
    artifact.findElement(By.tagName("button")).click();
    waitUntil(
        () ->
            artifact
                .findElement(By.cssSelector("[data-verified]"))
                .getAttribute("data-verified")
                .equals("true"));
    assertThat(awaitDownload("result.json")).isEqualTo(expected);

    // Its timeline: every row of the run in order, from the launch to the teardown, the kill
    // among them, and the chain verified up to the newest.
    waitFor(By.cssSelector("#timeline-events tr[data-type='agent_sandbox.teardown']"));
    List<String> timeline = new ArrayList<>();
    long previous = 0;
    for (WebElement event : browser.findElements(By.cssSelector("#timeline-events tbody tr"))) {
      long id = Long.parseLong(event.getAttribute("data-id"));
      assertThat(id).as("rows in order").isGreaterThan(previous);
      previous = id;
      timeline.add(event.getAttribute("data-type"));
    }
    assertThat(timeline.get(0)).isEqualTo("agent_sandbox.launch");
    assertThat(timeline.get(timeline.size() - 1)).isEqualTo("agent_sandbox.teardown");
    assertThat(timeline)
        .containsSubsequence(
            "agent_sandbox.launch",
            "agent_sandbox.egress.deny",
            "agent_sandbox.kill",
            "agent_sandbox.artifacts",
            "agent_sandbox.teardown");
    WebElement chain = find(By.id("timeline-chain"));
    assertThat(chain.getAttribute("data-chain")).isEqualTo("ok");
    assertThat(chain.getText()).contains("up to row " + previous);
    assertThat(find(By.id("timeline-facts")).getText())
        .contains(
            "Launched by\nadmin",
            "owner=alice task-ref=CONSOLE-14",
            "Killed by\nadmin",
            "1 kept (" + expected.length + " bytes)");
    script("document.getElementById('h-artifacts').scrollIntoView()");
    shot("run-record");

    // The runs list shows it; the filter narrows by status.
    open("runs");
    waitUntil(() -> find(By.id("runs-list")).getText().contains(runId));
    new Select(find(By.id("filter-status"))).selectByValue("running");
    waitUntil(() -> !find(By.id("runs-list")).getText().contains(runId));
    new Select(find(By.id("filter-status"))).selectByValue("killed");
    waitUntil(() -> find(By.id("runs-list")).getText().contains(runId));
    shot("runs");

    // The run's refusal, proposed as an entry with its evidence, put into the editor and previewed
    // with its impact: the refusal it would have allowed.
    open("config");
    WebElement proposalAgent = waitFor(By.id("proposal-agent"));
    waitUntil(() -> "helper".equals(proposalAgent.getDomProperty("value")));
    click(By.id("proposal-run"));
    WebElement proposed = waitFor(By.cssSelector("#proposal-result tr[data-entry='denied.test']"));
    assertThat(proposed.getText()).contains("denied.test", runId);
    assertThat(find(By.id("proposal-summary")).getAttribute("data-entries")).isEqualTo("1");
    shot("config-proposal");
    click(By.id("proposal-use"));
    waitFor(By.id("config-proposal-loaded"));
    waitUntil(() -> find(By.id("config-text")).getDomProperty("value").contains("denied.test"));
    click(By.id("config-preview"));
    WebElement impact = waitFor(By.cssSelector("#config-impact li[data-agent='helper']"));
    assertThat(impact.getAttribute("data-would-allow")).isEqualTo("1");
    assertThat(impact.getAttribute("data-would-break")).isEqualTo("0");
    assertThat(impact.getText())
        .contains("would have allowed 1 refusal in 1 run", "denied.test:80");
    assertThat(find(By.id("config-loosenings")).getText()).contains("allow_entry_added");
    shot("config-impact");

    // The audit, filtered to that run: its own rows only, the chain verified, exported.
    open("runs/" + runId);
    click(By.id("run-audit"));
    waitUntil(() -> runId.equals(find(By.id("audit-run")).getDomProperty("value")));
    waitUntil(() -> find(By.id("audit-rows")).getText().contains("agent_sandbox.teardown"));
    List<WebElement> rows = browser.findElements(By.cssSelector("#audit-rows tbody tr"));
    List<String> types = new ArrayList<>();
    for (WebElement row : rows) {
      types.add(row.getAttribute("data-type"));
      assertThat(row.findElements(By.tagName("td")).get(5).getText()).isEqualTo(runId);
    }
    assertThat(types)
        .contains(
            "agent_sandbox.launch",
            "agent_sandbox.egress.deny",
            "agent_sandbox.kill",
            "agent_sandbox.teardown");
    assertThat(waitFor(By.cssSelector("[data-chain]")).getAttribute("data-chain")).isEqualTo("ok");
    click(By.id("audit-export"));
    waitUntil(() -> find(By.id("audit-export-state")).getAttribute("data-lines") != null);
    assertThat(find(By.id("audit-export-state")).getAttribute("data-lines"))
        .isEqualTo(String.valueOf(rows.size()));
    List<String> exported =
        new String(awaitDownload("agent-sandbox-audit.jsonl"), StandardCharsets.UTF_8)
            .lines()
            .toList();
    assertThat(exported).hasSize(rows.size());
    for (String line : exported) {
      assertThat(JSON.readTree(line).path("run_id").asText()).isEqualTo(runId);
    }
    shot("audit");

    // The same rows found by the run's label instead of its id.
    find(By.id("audit-run")).clear();
    find(By.id("audit-label")).sendKeys("task-ref=NO-SUCH-TASK");
    applyAuditFilters();
    assertThat(find(By.id("audit-count")).getText()).isEqualTo("0 rows, newest first");
    find(By.id("audit-label")).clear();
    find(By.id("audit-label")).sendKeys("task-ref=CONSOLE-14");
    applyAuditFilters();
    assertThat(find(By.id("audit-count")).getText()).isEqualTo(rows.size() + " rows, newest first");
    for (WebElement row : browser.findElements(By.cssSelector("#audit-rows tbody tr"))) {
      assertThat(row.findElements(By.tagName("td")).get(5).getText()).isEqualTo(runId);
    }

    // The overview: the Docker backend as probed now, the chart, the denial among refusals.
    open("overview");
    waitUntil(
        () -> find(By.cssSelector("[aria-labelledby=h-backends]")).getText().contains("docker"));
    assertThat(find(By.cssSelector("[aria-labelledby=h-backends]")).getText())
        .contains("available");
    waitUntil(() -> !browser.findElements(By.cssSelector("svg.chart-svg rect.s-deny")).isEmpty());
    assertThat(browser.findElements(By.cssSelector("svg.chart-svg rect"))).hasSize(48);
    waitUntil(
        () ->
            find(By.cssSelector("[aria-labelledby=h-recent-refusals]"))
                .getText()
                .contains("denied.test"));
    shot("overview");

    // A token limited to another agent: the header says which, and helper's runs are not there.
    signOut();
    signIn(planners);
    waitUntil(() -> find(By.id("who-agents")).getText().contains("limited to agents: planner"));
    assertThat(find(By.id("who-name")).getText()).isEqualTo("Signed in as planners");
    open("runs");
    waitUntil(() -> find(By.id("runs-list")).getText().contains("No run matches."));
    assertThat(find(By.id("runs-list")).getText()).doesNotContain(runIds.get(0));
    shot("limited-token");

    List<String> violations = new ArrayList<>();
    for (LogEntry entry : browser.manage().logs().get(LogType.BROWSER)) {
      if (entry.getMessage().contains("Content Security Policy")) {
        violations.add(entry.getMessage());
      }
    }
    assertThat(violations).as("CSP violations reported by the browser").isEmpty();
  }

  /**
   * A session's page: its steps in order, each with its command, end, exit status, duration and the
   * decisions made while it ran, and a Close button, on the Docker backend's real sessions.
   */
  @Test
  void aSessionsPageShowsItsStepsWithTheirDecisions() throws Exception {
    ApiClient.Answer opened = client.post(CONFIG + "/sessions", admin, "{\"agent\": \"helper\"}");
    assertThat(opened.status()).as(opened.body()).isEqualTo(201);
    String id = opened.json().get("run_id").asText();
    runIds.add(id);
    String steps = CONFIG + "/runs/" + id + "/exec";
    api("POST", steps, admin, "{\"command\": [\"sh\", \"-c\", \"echo built > app.txt\"]}", null);
    api(
        "POST",
        steps,
        admin,
        "{\"command\": [\"sh\", \"-c\", \"curl -sS -m 10 -o /dev/null http://denied.test/; exit 7\"]}",
        null);
    // Signed in as admin whatever the other case left (it ends signed in as a token limited to
    // another agent, to which this session does not exist).
    browser.get(base + "/");
    script("sessionStorage.clear()");
    browser.navigate().refresh();
    signIn(admin);
    browser.get(base + "/#/runs/" + id);
    try {
      waitFor(By.cssSelector("#run-steps tr[data-step='2']"));
    } catch (org.openqa.selenium.TimeoutException e) {
      shot("session-failed");
      throw new AssertionError(
          "the session page shows no step 2; its state: "
              + find(By.id("run-state")).getText()
              + "; its steps: "
              + find(By.id("run-steps")).getText()
              + "; GET steps: "
              + api("GET", CONFIG + "/runs/" + id + "/steps", admin, null, null),
          e);
    }
    WebElement first = find(By.cssSelector("#run-steps tr[data-step='1']"));
    assertThat(first.getText()).contains("sh -c echo built > app.txt").contains("exit");
    WebElement second = find(By.cssSelector("#run-steps tr[data-step='2']"));
    assertThat(second.getText()).contains("7");
    waitUntil(
        () ->
            find(By.cssSelector("#run-steps tr[data-step='2']")).getText().contains("denied.test"));
    assertThat(find(By.id("run-kill")).getText()).isEqualTo("Close session");
    shot("session");
    click(By.id("run-kill"));
    waitUntil(
        () -> "closed".equals(find(By.cssSelector("#run-state dl")).getAttribute("data-status")));
  }

  private static void signIn(String token) {
    WebElement input = waitFor(By.id("token"));
    input.sendKeys(token);
    click(By.cssSelector("form.signin button[type=submit]"));
    waitFor(By.id("nav"));
    waitUntil(() -> find(By.id("nav")).isDisplayed());
  }

  private static void signOut() {
    click(By.cssSelector("#who button"));
    waitFor(By.id("token"));
    assertThat(script("return sessionStorage.getItem('agent-sandbox.token')")).isNull();
  }

  /** Applies the audit filters and waits for the rows they answer (not the ones shown before). */
  private static void applyAuditFilters() {
    WebElement before = find(By.id("audit-count"));
    click(By.id("audit-apply"));
    new WebDriverWait(browser, WAIT).until(ExpectedConditions.stalenessOf(before));
    waitFor(By.id("audit-count"));
  }

  private static void open(String page) {
    browser.get(base + "/#/" + page);
    waitFor(By.cssSelector(".page"));
  }

  private static void replaceText(WebElement element, String text) {
    element.clear();
    element.sendKeys(text);
  }

  private static Object script(String code) {
    return ((JavascriptExecutor) browser).executeScript(code);
  }

  private static WebElement find(By by) {
    return browser.findElement(by);
  }

  private static WebElement waitFor(By by) {
    return new WebDriverWait(browser, WAIT)
        .until(ExpectedConditions.visibilityOfElementLocated(by));
  }

  private static void click(By by) {
    new WebDriverWait(browser, WAIT).until(ExpectedConditions.elementToBeClickable(by)).click();
  }

  private static void waitUntil(java.util.function.BooleanSupplier condition) {
    new WebDriverWait(browser, WAIT)
        .ignoring(org.openqa.selenium.StaleElementReferenceException.class)
        .ignoring(org.openqa.selenium.NoSuchElementException.class)
        .until(driver -> condition.getAsBoolean());
  }

  private static void shot(String name) throws IOException {
    Path file = browser.getScreenshotAs(OutputType.FILE).toPath();
    Files.copy(file, SHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
  }

  /** The bytes of a finished download, waiting for the browser to finish writing it. */
  private static byte[] awaitDownload(String name) throws IOException {
    Path file = downloads.resolve(name);
    waitUntil(
        () -> Files.isRegularFile(file) && !Files.exists(downloads.resolve(name + ".crdownload")));
    byte[] bytes = Files.readAllBytes(file);
    Files.delete(file);
    return bytes;
  }

  private static String sha256(byte[] bytes) {
    try {
      return java.util.HexFormat.of()
          .formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String java() {
    return ProcessHandle.current().info().command().orElse("java");
  }

  private static String createToken(Path jar, String db, String name, String scopes, String... more)
      throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(
            List.of(
                java(),
                "-jar",
                jar.toString(),
                "token",
                "create",
                "--db",
                db,
                "--name",
                name,
                "--scopes",
                scopes));
    command.addAll(List.of(more));
    Process create =
        new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(create.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(create.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(create.exitValue()).as("token create").isZero();
    return out.strip();
  }

  private static JsonNode api(
      String method, String path, String token, String body, String ifMatch) {
    HttpRequest.Builder request = client.builder(path, token);
    if (ifMatch != null) {
      request.header("If-Match", ifMatch);
    }
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    ApiClient.Answer response = client.send(request);
    assertThat(response.status())
        .as(method + " " + path + ": " + response.body())
        .isBetween(200, 299);
    return response.json();
  }
}
