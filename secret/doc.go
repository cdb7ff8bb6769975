// Package secret keeps credentials out of the model's sight and off the
// disk.
//
// [Looks] tells the environment variables whose names say they hold a
// credential: provider keys (ANTHROPIC_API_KEY, OPENAI_API_KEY), anything
// named *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*, *_PRIVATE_KEY,
// *_CREDENTIALS, and the cloud providers' credentials (AWS_*, except the
// region and profile; GOOGLE_APPLICATION_CREDENTIALS; AZURE_CLIENT_SECRET
// and friends). [Env] is an environment without them, for the commands the
// agent runs, except those the user allows by name.
//
// A [Redactor] knows the values of those variables and replaces any of them
// that appears anyway — in a command's output, a log line, a file written
// to the session folder, a report — with "[redacted NAME]".
package secret
