//go:build race

package handlers

// raceDetector reports that the tests run under -race, where the
// heaviest ones run a smaller load (the detector slows them tenfold).
const raceDetector = true
