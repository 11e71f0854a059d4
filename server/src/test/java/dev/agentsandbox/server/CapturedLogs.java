package dev.agentsandbox.server;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.slf4j.LoggerFactory;

/**
 * Every log line of every thread while attached (libraries' background threads included), with
 * exception messages, safe to read while threads still log.
 */
public final class CapturedLogs extends AppenderBase<ILoggingEvent> {
  private final ConcurrentLinkedQueue<String> lines = new ConcurrentLinkedQueue<>();

  public static CapturedLogs attach() {
    CapturedLogs logs = new CapturedLogs();
    logs.start();
    root().addAppender(logs);
    return logs;
  }

  public void detach() {
    root().detachAppender(this);
    stop();
  }

  public List<String> lines() {
    return List.copyOf(lines);
  }

  @Override
  protected void append(ILoggingEvent event) {
    StringBuilder line = new StringBuilder(event.getFormattedMessage());
    for (IThrowableProxy t = event.getThrowableProxy(); t != null; t = t.getCause()) {
      line.append(" | ").append(t.getClassName()).append(": ").append(t.getMessage());
    }
    lines.add(line.toString());
  }

  private static Logger root() {
    return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  }
}
