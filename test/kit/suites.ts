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
  const suites: Test<C & OnTarget>[] = targets.map((target) => suite<C & OnTarget>(`${name} [${target.name}]`, { target } as C & OnTarget));
  const withHooks = (test: Callback<C & OnTarget>) => withinTest(hooks, test);
  const register = (title: string, test: Callback<C & OnTarget>) => suites.forEach((s) => s(title, withHooks(test)));
  register.only = (title: string, test: Callback<C & OnTarget>) => suites.forEach((s) => s.only(title, withHooks(test)));
  register.skip = (title?: string, test?: Callback<C & OnTarget>) => suites.forEach((s) => s.skip(title, test));
  register.run = () => suites.forEach((s) => s.run());
  return register;
}

/**
 * The hooks run inside the test itself, not as uvu's before.each and after.each: uvu runs
 * an after.each again when a test fails, and an error it throws there is lost together
 * with the test's own (the suite just counts one test fewer passed). Here the test's error
 * is reported, and an after-hook's error after it, or alone when the test passed.
 */
function withinTest<C>(hooks: TargetHooks<C>, test: Callback<C>): Callback<C> {
  return async (ctx) => {
    let failure: { error: unknown } | undefined;
    try {
      await hooks.beforeEach?.(ctx);
      await test(ctx);
    } catch (error) {
      failure = { error };
    }
    try {
      await hooks.afterEach?.(ctx);
    } catch (error) {
      if (failure === undefined) throw error;
      if (failure.error instanceof Error) failure.error.message += `\n    and after it, the after-each hook failed: ${String(error)}`;
    }
    if (failure !== undefined) throw failure.error;
  };
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
        const t = ctx.t as TestApp | undefined; // unset when the app did not start
        if (t === undefined) return;
        Reflect.deleteProperty(ctx, 't');
        try {
          await hooks.then?.(t);
        } finally {
          await t.close();
        }
      },
    },
    targets,
  );
}
