package x

// Get reads the config, since the listing's name lags (fact: listing-lag); a clone holds
// the lock (fact: clone-lock). Delete keeps its order (decision: seed-before-destroy,
// decision: delete-steps). A MAC like BC:24:11:F1:48:83 is not a fact.
