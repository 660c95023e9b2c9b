// LayoutCheck.cs — the Unity package is installable from a git URL: package.json
// names it and its samples, and every file and folder Unity imports has a .meta
// with a unique GUID (Unity ignores assets without one in an immutable package).
using System;
using System.Collections.Generic;
using System.IO;
using System.Text.RegularExpressions;

namespace Crowd.Harness
{
    public static class LayoutCheck
    {
        public static void Run(string pkg, string projectVersion)
        {
            string manifest = File.ReadAllText(Path.Combine(pkg, "package.json"));
            Check.That(Regex.IsMatch(manifest, "\"name\"\\s*:\\s*\"com\\.[a-z0-9.-]+\""), "package.json has a reverse-domain name");
            Check.That(Regex.IsMatch(manifest, "\"version\"\\s*:\\s*\"\\d+\\.\\d+\\.\\d+\""), "package.json has a semver version");
            Check.That(Regex.IsMatch(manifest, "\"unity\"\\s*:\\s*\"\\d{4}\\.\\d+\""), "package.json names the lowest Unity version");
            foreach (Match m in Regex.Matches(manifest, "\"path\"\\s*:\\s*\"([^\"]+)\""))
                Check.That(Directory.Exists(Path.Combine(pkg, m.Groups[1].Value)), "sample path " + m.Groups[1].Value + " exists");
            foreach (var dir in new[] { "Runtime", "Tests", "Samples~" })
                Check.That(Directory.Exists(Path.Combine(pkg, dir)), dir + "/ exists");

            // The files Unity's Package Manager shows: the manual, the changes, the license.
            string doc = Path.Combine(pkg, "Documentation~", "index.md");
            Check.That(File.Exists(doc) && File.ReadAllText(doc).StartsWith("# ", StringComparison.Ordinal), "Documentation~/index.md exists and has a title");
            string license = Path.Combine(pkg, "LICENSE.md");
            Check.That(File.Exists(license) && File.ReadAllText(license).StartsWith("MIT License", StringComparison.Ordinal) &&
                       Regex.IsMatch(manifest, "\"license\"\\s*:\\s*\"MIT\""), "LICENSE.md is the MIT license package.json names");
            string changelog = Path.Combine(pkg, "CHANGELOG.md");
            var version = Regex.Match(manifest, "\"version\"\\s*:\\s*\"([^\"]+)\"").Groups[1].Value;
            var newest = File.Exists(changelog) ? Regex.Match(File.ReadAllText(changelog), "^## \\[([^\\]]+)\\]", RegexOptions.Multiline).Groups[1].Value : "";
            Check.That(newest == version, "CHANGELOG.md's newest entry is package.json's version (" + newest + ", " + version + ")");
            if (projectVersion != null)
                Check.That(version == projectVersion, "package.json's version is the project's, shared with the server (" + version + ", CMake " + projectVersion + ")");
            // Any URL field is a real absolute https URL; no placeholder anywhere a user reads.
            foreach (Match m in Regex.Matches(manifest, "\"(\\w+Url)\"\\s*:\\s*\"([^\"]*)\""))
                Check.That(Regex.IsMatch(m.Groups[2].Value, "^https://[a-z0-9.-]+\\.[a-z]+/"), "package.json " + m.Groups[1].Value + " is an https URL");
            foreach (var f in new[] { "package.json", "README.md", "CHANGELOG.md", Path.Combine("Documentation~", "index.md") })
            {
                string text = File.Exists(Path.Combine(pkg, f)) ? File.ReadAllText(Path.Combine(pkg, f)) : "";
                var placeholder = Regex.Match(text, "<your[^>]*>|<you>|example\\.com/|TODO|FIXME");
                Check.That(!placeholder.Success, f + " has no placeholder (" + placeholder.Value + ")");
            }

            // WebGL: the assembly is built for it, and the jslib plugin is included there and only there.
            string asmdef = File.ReadAllText(Path.Combine(pkg, "Runtime", "Crowd.Client.asmdef"));
            Check.That(Regex.IsMatch(asmdef, "\"excludePlatforms\"\\s*:\\s*\\[\\s*\\]") && Regex.IsMatch(asmdef, "\"includePlatforms\"\\s*:\\s*\\[\\s*\\]"),
                       "Crowd.Client.asmdef builds for every platform, WebGL included");
            Check.That(Regex.IsMatch(asmdef, "\"noEngineReferences\"\\s*:\\s*false"), "Crowd.Client.asmdef references UnityEngine (Vector2)");
            string jslibMeta = Path.Combine(pkg, "Runtime", "Plugins", "WebGL", "CrowdWebSocket.jslib.meta");
            string jm = File.Exists(jslibMeta) ? File.ReadAllText(jslibMeta) : "";
            Check.That(jm.Contains("PluginImporter:") &&
                       Regex.IsMatch(jm, "WebGL: WebGL\\n    second:\\n      enabled: 1") &&
                       Regex.IsMatch(jm, "Any: \\n    second:\\n      enabled: 0") &&
                       Regex.IsMatch(jm, "Editor: Editor\\n    second:\\n      enabled: 0"),
                       "CrowdWebSocket.jslib.meta: a plugin for WebGL only");

            var guids = new Dictionary<string, string>();
            int missing = 0, assets = 0;
            var stack = new Stack<string>();
            stack.Push(pkg);
            while (stack.Count > 0)
            {
                string dir = stack.Pop();
                var entries = new List<string>(Directory.GetFileSystemEntries(dir));
                entries.Sort(StringComparer.Ordinal);
                foreach (string e in entries)
                {
                    string name = Path.GetFileName(e);
                    // Unity skips hidden names, names ending in ~ (Samples~) and .meta files themselves.
                    if (name.StartsWith(".", StringComparison.Ordinal) || name.EndsWith("~", StringComparison.Ordinal) || name.EndsWith(".meta", StringComparison.Ordinal)) continue;
                    assets++;
                    string meta = e + ".meta";
                    if (!File.Exists(meta))
                    {
                        Console.WriteLine("no .meta: " + e);
                        missing++;
                    }
                    else
                    {
                        var g = Regex.Match(File.ReadAllText(meta), "guid: ([0-9a-f]{32})");
                        if (!g.Success || guids.ContainsKey(g.Groups[1].Value))
                        {
                            Console.WriteLine("bad or duplicate guid: " + meta);
                            missing++;
                        }
                        else guids[g.Groups[1].Value] = e;
                    }
                    if (Directory.Exists(e)) stack.Push(e);
                }
            }
            Check.That(missing == 0 && assets > 10, "every one of " + assets + " imported files and folders has a .meta with a unique guid");
        }
    }
}
