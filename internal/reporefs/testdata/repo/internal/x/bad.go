package x

// Unresolved: fact: listing-lags and decision: seed-after-destroy.
// Forbidden: see entry 10 and F8, finding CR1 and P2, D3, Phase 10, seed 003, issue 8.
// Outside: ../shared/PVE-API.md and DESIGN.md.
// Names: func TestF01_errorText and TestPhase10_missingStorage.
