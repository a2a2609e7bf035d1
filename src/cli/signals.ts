/** Resolves on the first SIGTERM or SIGINT: long-running commands then shut down gracefully. */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals): void => {
      process.off('SIGTERM', done);
      process.off('SIGINT', done);
      resolve(signal);
    };
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });
}
