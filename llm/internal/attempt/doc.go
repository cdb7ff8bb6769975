// Package attempt holds the mechanics the provider adapters share: their
// configuration (Config), the classification of error answers, the
// retry loop with backoff and retry-after, a per-attempt silence timeout,
// capture of the request body an attempt sent (to save a rejected request
// for inspection) and the wording of network failures. It knows no SDK:
// adapters classify their SDK's errors and hand the loop an *llm.APIError
// marked retryable or not.
package attempt
