// Package wire encodes an llm.Request as a provider's JSON request body and
// decodes such a body back: the Anthropic Messages API
// (EncodeAnthropic/DecodeAnthropic), OpenAI chat completions
// (EncodeOpenAI/DecodeOpenAI), the OpenAI Responses API
// (EncodeResponses/DecodeResponses) and the Gemini API's generateContent
// (EncodeGemini/DecodeGemini).
//
// Encoding is deterministic: the same request always gives the same bytes
// (struct field order, no maps, tool inputs and schemas kept as raw bytes
// in their own key order, no HTML escaping), because prompt-cache prefixes
// depend on byte-identical requests. Content is always written in one
// canonical shape (system and message content as block lists), so
// decode(encode(r)) == r for every request the format can carry.
//
// # What the wire carries
//
// Only what the provider sees. Block ids, Meta (tier, source, token count,
// rung, pin) and Structured results never go to the wire. A decoded block
// gets conv.DefaultMeta for its place: system text SourceSystem, user text
// SourceUser (SourceReminder when it starts with <system-reminder>,
// SourceHook when it opens as text a client injects itself, SourceTool
// when it is a text-action agent's observation: UserSource),
// assistant blocks SourceAssistant, tool results and their content
// SourceTool. A tool result's Name is filled in from the tool_use it
// answers. Tool inputs are compacted but keep their key order. Request
// fields outside llm.Request (temperature, stop sequences, tool_choice,
// thinking configuration, metadata, citations) are ignored when decoding.
//
// # Summaries
//
// Neither provider has a summary block. A conv summary is sent as a text
// block of the form
//
//	<summary turns="3-17">
//	…text…
//	</summary>
//
// with merged="true" added after the turns for a merged summary, and a text
// block of exactly that form decodes back to a pinned summary block with
// its span.
//
// # Anthropic
//
// system, tools (name, description, input_schema, cache_control) and
// messages with text, tool_use, tool_result (string or text/image list,
// is_error), thinking (with signature), redacted_thinking and image blocks
// (source kept verbatim once it passes the check under Images),
// cache_control kept on every block. A server_tool_use block decodes to a
// conv server tool call, and a block of any other type (tool search's
// tool_reference, web_search_tool_result, document, newer ones) to an
// opaque block holding its bytes, inside a tool_result too (the result is
// then pinned: never cleared or cut); both encode back byte for byte. A
// tool of another type is an error naming the type (ErrUnknownType).
//
// # Images
//
// An image block's source has the Anthropic shape (ImageSource): base64
// data of a media type, or a URL. OpenAI's image_url and the Responses
// API's input_image name an image by URL: ImageFromURL reads one (a data
// URL, data:<media type>;base64,<data>, as a base64 source, any other URL
// as a URL source) for the decoders and the importers alike, and
// ImageFromBase64 reads Gemini's inline data. Every decoder applies one
// check to an image's source: a source has a type, a base64 source a
// media type and data, a URL source a URL; a data URL that is not base64
// is refused too (ErrInvalid). The data is not decoded, nor the media type
// matched against a provider's list: the provider refuses those itself,
// and a recording that holds such an image is replayed as it is. An
// input_image without an image_url (an uploaded file's) is kept whole, as
// an opaque block.
//
// # Opaque blocks and server tool calls of another API
//
// Every encoder writes an opaque block or a server tool call whose
// Provider is not its API as one text line, conv.Block.NoteText ("[tool_reference
// block from anthropic, not shown]", "[web_search run by the provider:
// {…}]"): that API could not read the bytes.
//
// # OpenAI Responses
//
// System blocks become instructions; each message becomes its items in
// order: text as a message item (input_text, or output_text from the
// assistant), tool calls as function_call, results as
// function_call_output (a tool error as "[tool error]"), redacted thinking
// as a reasoning item with its encrypted_content, a server tool call or a
// content part recorded from the Responses API (Codex's web_search_call,
// a refusal) as its bytes. Plain thinking is left out; store is false.
//
// # OpenAI chat completions
//
// System blocks become system messages, one per block. A user message's
// tool results become role "tool" messages (tool_call_id), one per result
// in order, followed by a user message with the rest of its content;
// decoding merges consecutive tool messages and the user message right
// after them back into one user message. Assistant tool_use blocks become
// tool_calls (arguments is the input as a string; arguments that are not a
// JSON object are kept as {"_raw_arguments": "…"} and written back as
// they were); tools become {"type":"function","function":{name,
// description, parameters}}. What chat completions cannot carry is mapped,
// not silently lost:
//
//   - thinking: sent as assistant text "<thinking>…</thinking>", decoded
//     back to a thinking block; its signature is dropped (only Anthropic
//     can verify it). Redacted thinking is dropped.
//   - is_error: the tool message starts with the line "[tool error]".
//   - images inside tool results: tool messages carry only text, so the
//     images move to the user message that follows the tool messages;
//     they decode as user content, no longer inside the result.
//   - cache_control: dropped (OpenAI caches prefixes automatically).
//   - an assistant message's text is always decoded before its tool calls.
//   - max_tokens is written as max_completion_tokens; either is read.
//
// # OpenAI Responses
//
// The whole history as input items, as a stateless client (Codex CLI,
// store:false) sends it: system text as instructions or, with
// ResponsesOptions.Developer, as developer messages at the start of input;
// user and assistant text as message items (one per assistant text);
// thinking as a reasoning item (summary the text, encrypted_content the
// signature), redacted thinking as a reasoning item with no summary
// (encrypted_content its data); tool_use as function_call, or as
// custom_tool_call with its freeform input when every call of the tool has
// an input of exactly {"input": "…"} (Codex's apply_patch, a custom tool);
// tool results as the matching *_output items ("[tool error]" line for an
// error). Decoding reads instructions, system and developer messages as
// the system prompt and groups consecutive output items into one assistant
// message. Each item is decoded by DecodeResponsesItem, the one definition
// of how a Responses item becomes blocks, which the Codex importer uses for
// the items of a rollout too: reasoning as thinking (summary text) or
// redacted thinking (none), compaction items as redacted thinking, a
// web_search_call as a server tool call keeping its bytes; an item type it
// does not read is ErrUnknownType, which DecodeResponses keeps as text of
// its content on the side that sent it.
//
// # Gemini
//
// contents of role user and model, parts as GeminiPart: text, thought
// (thinking, its thoughtSignature the signature), inline data (images),
// functionCall (tool_use, its thoughtSignature the block's Signature) and
// functionResponse ({"output": …}, {"error": …} for an error); system
// text as systemInstruction, tools as functionDeclarations with
// parametersJsonSchema, max_tokens as generationConfig.maxOutputTokens.
// The model is in the URL, not the body. Redacted thinking is dropped.
package wire
