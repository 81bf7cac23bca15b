// @ts-check
// A run's teardown stack: each stage that sets something up pushes how to undo it; the run undoes everything in
// reverse order whatever happens (an error, Ctrl-C, a crashed browser), and a step that fails does not stop the rest.

export class TeardownStack {
  constructor() {
    /** @type {{ name: string, undo: () => Promise<unknown> }[]} */
    this.steps = [];
  }

  /** @param {string} name what is undone, for messages @param {() => Promise<unknown>} undo */
  push(name, undo) {
    this.steps.push({ name, undo });
  }

  /**
   * Undo the steps whose name starts with prefix, newest first, and forget them (the rest stays for later).
   * @param {string} prefix
   * @param {(name: string, err: Error) => void} onError
   */
  async undo(prefix, onError) {
    const chosen = this.steps.filter((s) => s.name.startsWith(prefix));
    this.steps = this.steps.filter((s) => !s.name.startsWith(prefix));
    await runReversed(chosen, onError);
  }

  /** Undo everything, newest first. Calling it again does nothing. @param {(name: string, err: Error) => void} onError */
  async undoAll(onError) {
    const all = this.steps;
    this.steps = [];
    await runReversed(all, onError);
  }
}

/**
 * @param {{ name: string, undo: () => Promise<unknown> }[]} steps
 * @param {(name: string, err: Error) => void} onError
 */
async function runReversed(steps, onError) {
  for (const step of [...steps].reverse()) {
    try {
      await step.undo();
    } catch (err) {
      onError(step.name, /** @type {Error} */ (err));
    }
  }
}
