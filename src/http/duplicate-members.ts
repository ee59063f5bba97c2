// The duplicate-member check now lives with the strict JSON reader that PATCH and
// scripts/track share; this name stays for the tests that import it from here.
export { duplicateMember } from '../json/strict-json.ts';
