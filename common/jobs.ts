// Background jobs, one shape for every service: a job runs at start (or after firstAfterMs) and then every
// `everyMs`, never twice at once (single flight), with its errors logged and retried, and stop() waits for a run in
// progress. Each job lives in its own file under its service's jobs/ folder and is registered with the service's
// runner.
import type { Logger } from "./logger.ts";
import { Pause } from "./timing.ts";

export interface Job {
  /** Names the job in logs. */
  readonly name: string;
  /** The time between two runs. */
  readonly everyMs: number;
  /** The time before running again after a run that failed or returned false (unfinished); default everyMs. */
  readonly retryMs?: number;
  /** The time before the first run; default 0 (at start). */
  readonly firstAfterMs?: number;
  /**
   * One run; false means "not finished", retried after retryMs. A throw is logged and retried likewise. `signal`
   * aborts at stop(): a long run ends early at a safe point.
   */
  run(signal: AbortSignal): Promise<boolean | void>;
}

interface Entry {
  job: Job;
  pause: Pause;
  loop?: Promise<void>;
}

export class JobRunner {
  private readonly jobs: Entry[] = [];
  private readonly stopping = new AbortController();
  private started = false;

  constructor(private readonly log: Logger) {}

  add(job: Job): this {
    const entry: Entry = { job, pause: new Pause() };
    this.jobs.push(entry);
    if (this.started) entry.loop ??= this.loop(entry);
    return this;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const entry of this.jobs) entry.loop ??= this.loop(entry);
  }

  /** Runs the named job now (or right after its current run) instead of at its next time. */
  wake(name: string): void {
    for (const entry of this.jobs) if (entry.job.name === name) entry.pause.wake();
  }

  /** Ends every job's loop; a run in progress finishes first. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all(this.jobs.map((e) => e.loop));
  }

  private async loop({ job, pause }: Entry): Promise<void> {
    const signal = this.stopping.signal;
    if (job.firstAfterMs) await pause.wait(job.firstAfterMs, signal, true);
    while (!signal.aborted) {
      let finished = true;
      try {
        finished = (await job.run(signal)) !== false;
      } catch (err) {
        finished = false;
        this.log.warn(`${job.name} failed; it is retried`, { err });
      }
      if (signal.aborted) break;
      // Unref'd: a job alone does not keep a process alive that has nothing else to do.
      await pause.wait(finished ? job.everyMs : (job.retryMs ?? job.everyMs), signal, true);
    }
  }
}
