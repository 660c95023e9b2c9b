#!/bin/sh
# Writes the .meta file Unity needs beside every file and folder of the package
# (assets without one are ignored in a package installed from git). GUIDs are
# derived from the path, so re-running changes nothing. Usage: make-meta.sh [PKG]
set -eu
pkg=${1:-$(cd "$(dirname "$0")/../../clients/unity" && pwd)}
cd "$pkg"
find . -mindepth 1 \( -name '.*' -o -name '*~' \) -prune -o ! -name '*.meta' -print | sort | while read -r path; do
  meta="$path.meta"
  [ -e "$meta" ] && continue
  guid=$(printf 'com.crowd.client/%s' "${path#./}" | md5sum | cut -c1-32)
  case "$path" in
    *.jslib)
      # A WebGL-only plugin: Unity includes it in WebGL player builds and nowhere else.
      printf 'fileFormatVersion: 2\nguid: %s\nPluginImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  iconMap: {}\n  executionOrder: {}\n  defineConstraints: []\n  isPreloaded: 0\n  isOverridable: 0\n  isExplicitlyReferenced: 0\n  validateReferences: 1\n  platformData:\n  - first:\n      Any: \n    second:\n      enabled: 0\n      settings: {}\n  - first:\n      Editor: Editor\n    second:\n      enabled: 0\n      settings:\n        DefaultValueInitialized: true\n  - first:\n      WebGL: WebGL\n    second:\n      enabled: 1\n      settings: {}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n' "$guid" > "$meta"
      echo "wrote $meta"
      continue ;;
  esac
  if [ -d "$path" ]; then
    importer="folderAsset: yes
DefaultImporter:"
  else
    case "$path" in
      *.cs) importer="MonoImporter:
  serializedVersion: 2
  defaultReferences: []
  executionOrder: 0
  icon: {instanceID: 0}" ;;
      *.asmdef) importer="AssemblyDefinitionImporter:" ;;
      */package.json) importer="PackageManifestImporter:" ;;
      *.md|*.txt|*.json) importer="TextScriptImporter:" ;;
      *) importer="DefaultImporter:" ;;
    esac
  fi
  printf 'fileFormatVersion: 2\nguid: %s\n%s\n  externalObjects: {}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n' \
    "$guid" "$importer" > "$meta"
  echo "wrote $meta"
done
