package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.util.concurrent.ExecutorService;

/**
 * The parts of one control plane's runs, wired to each other once ({@link #compose}): who admits
 * ({@link RunAdmission}) and holds the slots ({@link RunSlots}), who launches ({@link RunLauncher})
 * and follows a run ({@link RunLifecycle}), the warm pool, the live runs, the answers for live and
 * stored runs, the recovery after a restart and the sessions. {@link RunService} is the façade over
 * them and does nothing but delegate.
 */
record RunParts(
    RunSettings settings,
    Clock clock,
    LiveRuns live,
    RunAnswers answers,
    RunRecovery recovery,
    RunAdmission admission,
    RunSlots slots,
    WarmPool pool,
    RunLauncher launcher,
    Sessions sessions) {

  /**
   * Every part, each given the parts it uses: one audit trail for runs and sessions, one set of
   * slots that runs, sessions and warm sandboxes all count against, one session lifecycle that a
   * run's end and the recovery both close sessions through.
   */
  static RunParts compose(
      ConfigSource configs,
      BackendSelector selector,
      Store store,
      OperatorEgress operator,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      RunContractServices contract) {
    RunTrail trail = new RunTrail(store.audit());
    LiveRuns live = new LiveRuns(settings.finishedRunsKept());
    RunAnswers answers = new RunAnswers(store, live, trail, clock, settings.tailBytes());
    SessionAudit sessionAudit = new SessionAudit(trail);
    SessionLifecycle sessionLifecycle = new SessionLifecycle(store, sessionAudit, clock, executor);
    RunRecovery recovery =
        new RunRecovery(store, trail, contract.credentials(), clock, sessionLifecycle);
    RunAdmission admission =
        new RunAdmission(configs, selector, operator, contract.credentials(), clock);
    RunSlots slots = new RunSlots(settings.maxConcurrentRuns());
    WarmPool pool =
        new WarmPool(
            configs, selector, slots, admission::template, executor, clock, settings.warmMaxIdle());
    RunLifecycle lifecycle =
        new RunLifecycle(store, clock, json, live::retire, contract, sessionLifecycle);
    RunLauncher launcher =
        new RunLauncher(
            store,
            settings,
            clock,
            executor,
            json,
            lifecycle,
            contract.credentials(),
            new RunLauncher.Admitting(admission, slots, pool, live));
    Sessions sessions =
        new Sessions(
            store,
            admission,
            slots,
            pool,
            launcher,
            live,
            executor,
            sessionAudit,
            new SessionSteps(store, sessionAudit, clock, executor, json, settings.tailBytes()),
            new SessionFiles(sessionAudit, settings.spool()));
    return new RunParts(
        settings, clock, live, answers, recovery, admission, slots, pool, launcher, sessions);
  }
}
