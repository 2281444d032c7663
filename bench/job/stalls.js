'use strict';
// Where a refused stall starts, relative to the job: before a hook process
// (the runner arms it just before starting that step), or at the first
// request of a kind (armed on the apiserver, which starts the stall as that
// request arrives, so the request itself is cut).

const PLACES = Object.freeze({
  'before prepare': { beforeStep: 'prepare' },
  'pod create': { trigger: { route: 'create pods' } },
  'phase polling': { trigger: { route: 'get pods' } },
  'exec set-up': { trigger: { route: 'exec pods' } },
  'between steps': { beforeStep: 'script 2' },
  'before cleanup': { beforeStep: 'cleanup' },
});

/**
 * Arms a refused stall of `stallMs` at `place` (a key of PLACES, or null for
 * none). Returns { beforeStep(label), finish() }: call beforeStep before each
 * hook process; finish() after the job disarms a trigger that never fired
 * and waits for a stall in progress to end. finish() resolves
 * { fired, startedAtMs }.
 */
function armStall(server, place, stallMs) {
  const none = { beforeStep() {}, finish: async () => ({ fired: false, startedAtMs: null }) };
  if (!place) return none;
  const spec = PLACES[place];
  if (!spec) throw new RangeError(`unknown stall place ${JSON.stringify(place)}; one of ${Object.keys(PLACES).join(', ')}`);
  const timeline = [{ phase: 'refuse', ms: stallMs }, { phase: 'healthy' }];
  const historyFrom = server.phaseHistory.length;
  let running = null;
  if (spec.trigger) running = server.armTrigger(spec.trigger, timeline);
  return {
    beforeStep(label) {
      if (spec.beforeStep === label) running = server.runTimeline(timeline);
    },
    async finish() {
      if (spec.trigger) server.disarmTriggers();
      const fired = running ? await running : false;
      if (server.phase !== 'healthy') await server.setPhase('healthy');
      const refused = server.phaseHistory.slice(historyFrom).find((p) => p.phase === 'refuse');
      return { fired: Boolean(fired), startedAtMs: refused ? refused.atMs : null };
    },
  };
}

module.exports = { PLACES, armStall };
