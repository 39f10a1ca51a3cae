#!/bin/sh
# Fresh internal RPC credentials (common/internal-auth.ts), as `NAME=value` lines for docker compose's .env:
#   sh deploy/internal-credentials.sh >> .env
# Each caller's token (INTERNAL_TOKEN_GATEWAY, _MATCHER, _DELIVERER, _OPERATOR) goes to that service alone; the
# registry and the deliverer get the callers' SHA-256 digests (…_SHA256), which let them recognise a caller without
# being able to present its token. For Kubernetes, put the tokens in deploy/k8s/secret.yaml and the digests in the
# tron-webhooks-callers ConfigMap of deploy/k8s/config.yaml.
set -eu
for caller in GATEWAY MATCHER DELIVERER OPERATOR; do
  token=$(openssl rand -base64 32)
  digest=$(printf %s "$token" | openssl dgst -sha256 -r | cut -d' ' -f1)
  echo "INTERNAL_TOKEN_${caller}=${token}"
  echo "INTERNAL_TOKEN_${caller}_SHA256=${digest}"
done
