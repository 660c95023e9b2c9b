// ClickTargets.cs — sample: spawns a group of agents for this client (again
// after every reconnect, since a client's agents leave with it) and sends the
// point under each left click on the ground plane (y = 0) as their target.
using System.Collections.Generic;
using Crowd.Client;
using Crowd.V1;
using UnityEngine;

namespace Crowd.Samples
{
    public class ClickTargets : MonoBehaviour
    {
        public CrowdView view;
        public int spawnCount = 20;
        public float spawnRadius = 4f;
        public Vector3 spawnCenter = Vector3.zero;

        readonly List<uint> mine = new List<uint>();

        void Start()
        {
            if (view == null) view = GetComponent<CrowdView>();
            view.Client.Welcomed += welcome => SpawnGroup();
        }

        void SpawnGroup()
        {
            var specs = new List<AgentSpec>();
            for (int i = 0; i < spawnCount; i++)
            {
                float angle = 2f * Mathf.PI * i / Mathf.Max(1, spawnCount);
                specs.Add(new AgentSpec
                {
                    Position = new Vec2(spawnCenter.x + spawnRadius * Mathf.Cos(angle), spawnCenter.z + spawnRadius * Mathf.Sin(angle)),
                });
            }
            view.Client.Spawn(specs,
                ack => { mine.Clear(); mine.AddRange(ack.Ids); },
                err => Debug.LogWarning("crowd: spawn refused: " + err));
        }

        void Update()
        {
            if (mine.Count == 0 || !Input.GetMouseButtonDown(0)) return;
            Camera cam = Camera.main;
            if (cam == null) return;
            Ray ray = cam.ScreenPointToRay(Input.mousePosition);
            var ground = new Plane(Vector3.up, Vector3.zero);
            float enter;
            if (!ground.Raycast(ray, out enter)) return;
            Vector3 p = ray.GetPoint(enter);
            view.Client.SetTarget(mine, p.x, p.z, null, err => Debug.LogWarning("crowd: target refused: " + err));
        }
    }
}
