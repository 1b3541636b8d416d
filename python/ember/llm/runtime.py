"""Tokenizers, generation and chat in C, from Python (libember's LLM
extension through ``ember._llm``).

    from ember.llm.runtime import LLM, Tokenizer

    tok = Tokenizer("path/to/model_dir")       # tokenizer.json, tokenizer.model, vocab.json...
    tok.encode("Hello")                         # ids, special tokens in the text parsed
    llm = LLM("model.pte", "path/to/model_dir")
    llm.generate("Once upon a time", max_new_tokens=32, temperature=0)
    llm.chat([{"role": "user", "content": "Hi!"}])   # through the model's chat template
    chat = llm.start_chat(system="Be brief.")
    chat.send("Hi!"); chat.send("And then?")        # each turn runs only its new tokens

Generation settings (keywords): max_new_tokens (128), temperature (0.8; 0 is
greedy), top_k (0: all), top_p (1.0), repetition_penalty (1.0), seed (None:
from the clock), kv_keep, and on_token(token_id, text), called with each
token as it is chosen (token -1 brings the text still held at the end).
Failures raise ember.runtime.EmberError.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import _llm  # type: ignore[attr-defined]

__all__ = ["Tokenizer", "LLM", "Chat"]

TokenCallback = Callable[[int, str], None]


class Tokenizer:
    """A tokenizer file or model directory: tiktoken ranks (Llama 3's
    tokenizer.model), Hugging Face tokenizer.json, SentencePiece models,
    GPT-2's vocab.json + merges.txt. ``pattern`` and ``special_tokens`` are
    tiktoken's (default: Llama 3's)."""

    def __init__(self, path: str, pattern: Optional[str] = None,
                 special_tokens: Optional[Sequence[str]] = None) -> None:
        self._tok = _llm.Tokenizer(str(path), pattern, None if special_tokens is None
                                   else list(special_tokens))

    def encode(self, text: str, special: bool = True) -> List[int]:
        """The ids of text, no BOS or EOS added; special tokens written in it
        become their ids unless special is False."""
        return self._tok.encode(text, special)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(ids))

    def token_id(self, token: str) -> Optional[int]:
        return self._tok.token_id(token)

    def token_text(self, token_id: int) -> bytes:
        """A token's spelling in the file (byte-level or "▁" forms)."""
        return self._tok.token_text(token_id)

    @property
    def vocab_size(self) -> int:
        return self._tok.vocab_size

    @property
    def bos_id(self) -> int:
        return self._tok.bos_id

    @property
    def eos_ids(self) -> List[int]:
        return self._tok.eos_ids

    @property
    def format(self) -> str:
        return self._tok.format

    @property
    def chat_template(self) -> Optional[str]:
        return self._tok.chat_template


def _options(max_new_tokens: int = 128, temperature: float = 0.8, top_k: int = 0,
             top_p: float = 1.0, repetition_penalty: float = 1.0, seed: Optional[int] = None,
             kv_keep: int = 0) -> Dict[str, Any]:
    return {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_k": top_k,
            "top_p": top_p, "repetition_penalty": repetition_penalty,
            "seed": random.getrandbits(63) if seed is None else seed, "kv_keep": kv_keep}


class Chat:
    """A conversation (see LLM.start_chat)."""

    def __init__(self, chat: Any) -> None:
        self._chat = chat

    def send(self, message: str, on_token: Optional[TokenCallback] = None, **settings: Any) -> str:
        """Adds a user message; returns (and keeps) the model's reply."""
        return self._chat.send(message, _options(**settings), on_token)

    def add(self, role: str, content: str) -> None:
        """Adds a message to the history without generating."""
        self._chat.add(role, content)

    def reply(self, on_token: Optional[TokenCallback] = None, **settings: Any) -> str:
        """The reply to the conversation as it stands, kept in it."""
        return self._chat.reply(_options(**settings), on_token)

    @property
    def messages(self) -> int:
        return self._chat.messages


class LLM:
    """A program (an ExecuTorch LLM export: forward(tokens, input_pos) with a
    KV cache, or tokens only) and its tokenizer."""

    def __init__(self, model: str, tokenizer: Optional[str] = None, threads: int = 0) -> None:
        self._runner = _llm.Runner(str(model), None if tokenizer is None else str(tokenizer),
                                   threads)

    def generate(self, prompt: str, on_token: Optional[TokenCallback] = None,
                 **settings: Any) -> str:
        """The text generated after prompt (taken as it is: no chat template;
        the program's BOS goes in front where its metadata names one)."""
        return self._runner.generate(prompt, _options(**settings), on_token)

    def start_chat(self, system: Optional[str] = None, template: Optional[str] = None,
                   thinking: Optional[bool] = None,
                   on_note: Optional[Callable[[str], None]] = None) -> Chat:
        """A conversation through the model's chat template (or template):
        each turn runs only the tokens the program's cache does not hold;
        when the context fills, the oldest messages after the system prompt
        are dropped and on_note says so."""
        return Chat(_llm.Chat(self._runner, system, template, thinking, on_note))

    def chat(self, messages: Sequence[Dict[str, str]], on_token: Optional[TokenCallback] = None,
             template: Optional[str] = None, thinking: Optional[bool] = None,
             **settings: Any) -> str:
        """The assistant's reply to a list of {"role", "content"} messages."""
        c = self.start_chat(template=template, thinking=thinking)
        for m in messages:
            c.add(m["role"], m["content"])
        return c.reply(on_token, **settings)

    def encode(self, text: str) -> List[int]:
        """The ids generate() runs for text (special tokens parsed, BOS)."""
        return self._runner.encode(text)

    @property
    def max_seq_len(self) -> int:
        return self._runner.max_seq_len

    @property
    def vocab_size(self) -> int:
        return self._runner.vocab_size

    @property
    def stop_ids(self) -> List[int]:
        return self._runner.stop_ids
