package dev.agentsandbox.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox completion bash|zsh}: the completion script picocli generates. */
@Command(
    name = "completion",
    mixinStandardHelpOptions = true,
    description = {
      "Print the bash or zsh completion script",
      "",
      "scripts/install-host.sh installs it for every user; to load it in one shell only:"
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox completion bash > ~/.local/share/bash-completion/completions/agent-sandbox",
      "  source <(agent-sandbox completion bash)",
      "  echo 'source <(agent-sandbox completion zsh)' >> ~/.zshrc"
    })
final class CompletionCommand implements Callable<Integer> {
  /** The shells picocli's script supports (zsh through bashcompinit). */
  enum Shell {
    BASH,
    ZSH
  }

  @Spec CommandSpec spec;

  @Parameters(paramLabel = "SHELL", description = "bash or zsh")
  Shell shell;

  @Override
  public Integer call() {
    String script = AutoComplete.bash("agent-sandbox", spec.root().commandLine());
    PrintWriter out = spec.commandLine().getOut();
    // One script for both: under zsh it loads zsh's bash-compatibility layer (bashcompinit).
    out.print(script);
    out.flush();
    return 0;
  }
}
