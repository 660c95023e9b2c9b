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
        public static void Run(string pkg)
        {
            string manifest = File.ReadAllText(Path.Combine(pkg, "package.json"));
            Check.That(Regex.IsMatch(manifest, "\"name\"\\s*:\\s*\"com\\.[a-z0-9.-]+\""), "package.json has a reverse-domain name");
            Check.That(Regex.IsMatch(manifest, "\"version\"\\s*:\\s*\"\\d+\\.\\d+\\.\\d+\""), "package.json has a semver version");
            Check.That(Regex.IsMatch(manifest, "\"unity\"\\s*:\\s*\"\\d{4}\\.\\d+\""), "package.json names the lowest Unity version");
            foreach (Match m in Regex.Matches(manifest, "\"path\"\\s*:\\s*\"([^\"]+)\""))
                Check.That(Directory.Exists(Path.Combine(pkg, m.Groups[1].Value)), "sample path " + m.Groups[1].Value + " exists");
            foreach (var dir in new[] { "Runtime", "Tests", "Samples~" })
                Check.That(Directory.Exists(Path.Combine(pkg, dir)), dir + "/ exists");

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
