package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * {@code agent-sandbox run --input DIR} / {@code --input-file LOCAL=PATH}: a one-shot run whose
 * command needs files is a session used for one step (docs/api.md, "A one-shot run with inputs"):
 * open it, put the files, run the command streamed, close it; printed and exited as {@code run}
 * does. The session is closed on every path, so its outputs are collected and its sandbox goes.
 */
final class InputRun {
  /** What {@code run} does with the result's artifacts: its own {@code --artifacts}. */
  interface Artifacts {
    int save(AdminApi client, String runId, int code, PrintWriter err)
        throws IOException, InterruptedException;
  }

  private final CommandSpec spec;
  private final ApiConnection api;
  private final RunCommand.Workload workload;
  private final Path input;
  private final List<String> inputFiles;
  private final boolean json;

  InputRun(
      CommandSpec spec,
      ApiConnection api,
      RunCommand.Workload workload,
      Path input,
      List<String> inputFiles,
      boolean json) {
    this.spec = spec;
    this.api = api;
    this.workload = workload;
    this.input = input;
    this.inputFiles = inputFiles;
    this.json = json;
  }

  int run(Artifacts artifacts) throws IOException, InterruptedException {
    if (input != null && !Files.isDirectory(input)) {
      throw new ParameterException(spec.commandLine(), "--input " + input + ": not a folder");
    }
    Map<String, String> files = RunCommand.pairs(spec, "--input-file", inputFiles);
    for (String local : files.keySet()) {
      if (!Files.isRegularFile(Path.of(local))) {
        throw new ParameterException(spec.commandLine(), "--input-file " + local + ": not a file");
      }
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Terminal terminal = Terminal.detect(api.env);
    try (AdminApi client = api.open(spec)) {
      SessionClient sessions = new SessionClient(client, terminal);
      String id;
      try {
        Map<String, Object> open = workload.body(spec);
        open.remove("command");
        id = sessions.open(open).path("run_id").asText();
      } catch (ApiCallException | IOException e) {
        err.println("agent-sandbox run: " + e.getMessage());
        err.flush();
        return ExitCodes.REFUSED;
      }
      int code;
      try {
        if (input != null) {
          SessionCopy.put(sessions, input, id, ".", err);
        }
        for (Map.Entry<String, String> file : files.entrySet()) {
          SessionCopy.put(sessions, Path.of(file.getKey()), id, file.getValue(), err);
        }
        Map<String, Object> step =
            SessionExec.body(spec, workload.command, Map.of(), null, 4 * 60 * 60, false);
        if (json) {
          JsonNode result = sessions.execWhole(id, step);
          out.println(Printer.json(result));
          out.flush();
          code = ExitCodes.ofStep(result, id, err, terminal);
        } else {
          code = SessionExec.run(sessions, id, step, out, err, terminal);
        }
      } catch (ApiCallException | IOException e) {
        err.println("agent-sandbox run: " + e.getMessage());
        err.flush();
        code = ExitCodes.REFUSED;
      } finally {
        try {
          sessions.close(id);
        } catch (ApiCallException e) {
          if (!e.code().equals("run_ended")) {
            err.println("agent-sandbox run: " + e.getMessage());
          }
        } catch (IOException e) {
          err.println("agent-sandbox run: " + e.getMessage() + " (it ends at its idle time)");
        }
        err.flush();
      }
      return artifacts.save(client, id, code, err);
    }
  }
}
