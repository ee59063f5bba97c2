// Suites that run on every store target: one uvu suite per target, named "<name> [sqlite]",
// "<name> [postgres]", …, each test registered once and run on all of them. A test file
// written with these needs no change when a target is added to storeTargets().
import { suite, type Callback, type Test } from 'uvu';
import { startApp, type AppOptions, type TestApp } from './app.ts';
import { storeTargets, type StoreTarget } from './stores.ts';

export interface OnTarget {
  target: StoreTarget;
}

export interface TargetHooks<C> {
  /** Before each test, on the suite's target. */
  beforeEach?: Callback<C>;
  /** After each test, even a failed one. */
  afterEach?: Callback<C>;
}

/** Registers a test on every target's suite; run() runs them all. */
export interface TargetSuites<C> {
  (title: string, test: Callback<C>): void;
  only(title: string, test: Callback<C>): void;
  /** Counted as skipped on every target's suite (kit/tools.ts says why). */
  skip(title?: string, test?: Callback<C>): void;
  run(): void;
}

export function targetSuites<C extends object = object>(
  name: string,
  hooks: TargetHooks<C & OnTarget> = {},
  targets: StoreTarget[] = storeTargets(),
): TargetSuites<C & OnTarget> {
  const suites: Test<C & OnTarget>[] = targets.map((target) => {
    const s = suite<C & OnTarget>(`${name} [${target.name}]`, { target } as C & OnTarget);
    if (hooks.beforeEach) s.before.each(hooks.beforeEach);
    if (hooks.afterEach) s.after.each(hooks.afterEach);
    return s;
  });
  const register = (title: string, test: Callback<C & OnTarget>) => suites.forEach((s) => s(title, test));
  register.only = (title: string, test: Callback<C & OnTarget>) => suites.forEach((s) => s.only(title, test));
  register.skip = (title?: string, test?: Callback<C & OnTarget>) => suites.forEach((s) => s.skip(title, test));
  register.run = () => suites.forEach((s) => s.run());
  return register;
}

export interface AppHooks {
  /** Seeds each test's app. */
  given?: (t: TestApp) => Promise<void>;
  /** Checked after each test, before the app closes. */
  then?: (t: TestApp) => void | Promise<void>;
  app?: Omit<AppOptions, 'target'>;
}

/**
 * Suites whose every test gets a fresh app (ctx.t) on its target, seeded by `given`, with
 * the `then` check run after each test, before the app closes.
 */
export function appSuite(name: string, hooks: AppHooks = {}, targets?: StoreTarget[]): TargetSuites<{ t: TestApp } & OnTarget> {
  return targetSuites<{ t: TestApp }>(
    name,
    {
      async beforeEach(ctx) {
        ctx.t = await startApp({ ...hooks.app, target: ctx.target });
        await hooks.given?.(ctx.t);
      },
      async afterEach(ctx) {
        try {
          await hooks.then?.(ctx.t);
        } finally {
          await ctx.t.close();
        }
      },
    },
    targets,
  );
}
