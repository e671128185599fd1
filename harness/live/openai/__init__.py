"""Any OpenAI-compatible server as a target: `/v1/completions` or `/v1/chat/completions`, streaming.

`UrlTarget` (target) says where and what to send; `prompts` builds text of a target
token count; `stream` reads the SSE answer and counts its tokens. These import no web
library, so the CLI can tell an LLM URL (`is_llm_url`) cheaply. The I/O is in two
modules imported by name: `run` (`prepare` probes a server for its model, what it
accepts and its tokens per word; `drive_url` sends a token schedule) and `drive`
(`drive_stream`, the open-loop driver under it, shared with the tiny decoder's own
live runs).
"""

from harness.live.openai.prompts import Calibration, PromptBuilder, load_tokenizer
from harness.live.openai.stream import Api, CountSource, Tally, api_of, is_llm_url, parse_line
from harness.live.openai.target import DEFAULT_API_KEY_ENV, URL_KNOBS, UrlTarget

__all__ = ["DEFAULT_API_KEY_ENV", "URL_KNOBS", "Api", "Calibration", "CountSource", "PromptBuilder", "Tally",
           "UrlTarget", "api_of", "is_llm_url", "load_tokenizer", "parse_line"]
