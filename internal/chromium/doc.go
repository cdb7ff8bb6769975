// Package chromium finds and runs headless Chromium for the tests that
// check a page renders (the bench HTML report, the serve status page),
// with the network cut off so a page that needs external assets fails.
package chromium
