/// An error a test's fault injection throws to stand for `kill -9` at that point: the code that
/// a failing run runs on its way out (undoing its own half-done work at once) is skipped for it,
/// as a killed process could not run it, so that the test sees what the next run must deal with.
/// Other injected errors stand for a real failure there (a full disk, a lost lock) and get the
/// failing run's own clean-up.
protocol StandsForAKill: Error {}
