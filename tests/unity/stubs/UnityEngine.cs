// UnityEngine.cs — a stand-in for the small part of Unity's API the samples use,
// so they compile (and can be driven) under Mono in the test tree. Signatures
// follow Unity's; behaviour is the least that makes a GameObject pool observable.
using System;
using System.Collections.Generic;

namespace UnityEngine
{
    [AttributeUsage(AttributeTargets.Field)] public sealed class TooltipAttribute : Attribute { public TooltipAttribute(string tooltip) { } }
    [AttributeUsage(AttributeTargets.Field)] public sealed class HeaderAttribute : Attribute { public HeaderAttribute(string header) { } }
    [AttributeUsage(AttributeTargets.Field)] public sealed class SerializeField : Attribute { }

    public struct Vector3
    {
        public float x, y, z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
        public static Vector3 zero { get { return new Vector3(0, 0, 0); } }
        public static Vector3 one { get { return new Vector3(1, 1, 1); } }
        public static Vector3 up { get { return new Vector3(0, 1, 0); } }
        public static Vector3 operator *(Vector3 a, float d) { return new Vector3(a.x * d, a.y * d, a.z * d); }
        public static Vector3 operator +(Vector3 a, Vector3 b) { return new Vector3(a.x + b.x, a.y + b.y, a.z + b.z); }
        public static Vector3 operator -(Vector3 a, Vector3 b) { return new Vector3(a.x - b.x, a.y - b.y, a.z - b.z); }
        public static float Dot(Vector3 a, Vector3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
        public override string ToString() { return "(" + x + ", " + y + ", " + z + ")"; }
    }

    public struct Vector2
    {
        public float x, y;
        public Vector2(float x, float y) { this.x = x; this.y = y; }
        public static Vector2 zero { get { return new Vector2(0, 0); } }
        public float magnitude { get { return (float)Math.Sqrt(x * x + y * y); } }
        public float sqrMagnitude { get { return x * x + y * y; } }
        public static Vector2 operator +(Vector2 a, Vector2 b) { return new Vector2(a.x + b.x, a.y + b.y); }
        public static Vector2 operator -(Vector2 a, Vector2 b) { return new Vector2(a.x - b.x, a.y - b.y); }
        public static Vector2 operator *(Vector2 a, float d) { return new Vector2(a.x * d, a.y * d); }
        public static float Distance(Vector2 a, Vector2 b) { return (a - b).magnitude; }
        public static implicit operator Vector3(Vector2 v) { return new Vector3(v.x, v.y, 0); }
        public static implicit operator Vector2(Vector3 v) { return new Vector2(v.x, v.y); }
        public override string ToString() { return "(" + x + ", " + y + ")"; }
    }

    public struct Quaternion
    {
        public float x, y, z, w;
        public static Quaternion identity { get { return new Quaternion { w = 1 }; } }
        public static Quaternion LookRotation(Vector3 forward)
        {
            float yaw = (float)Math.Atan2(forward.x, forward.z);
            return new Quaternion { y = (float)Math.Sin(yaw / 2), w = (float)Math.Cos(yaw / 2) };
        }
    }

    public struct Ray
    {
        public Vector3 origin, direction;
        public Ray(Vector3 origin, Vector3 direction) { this.origin = origin; this.direction = direction; }
        public Vector3 GetPoint(float distance) { return origin + direction * distance; }
    }

    public struct Plane
    {
        Vector3 normal;
        float distance;
        public Plane(Vector3 inNormal, Vector3 inPoint) { normal = inNormal; distance = -Vector3.Dot(inNormal, inPoint); }
        public bool Raycast(Ray ray, out float enter)
        {
            float d = Vector3.Dot(ray.direction, normal);
            float n = -Vector3.Dot(ray.origin, normal) - distance;
            enter = 0;
            if (Math.Abs(d) < 1e-6f) return false;
            enter = n / d;
            return enter > 0;
        }
    }

    public static class Mathf
    {
        public const float PI = (float)Math.PI;
        public static float Cos(float f) { return (float)Math.Cos(f); }
        public static float Sin(float f) { return (float)Math.Sin(f); }
        public static int Max(int a, int b) { return Math.Max(a, b); }
    }

    public static class Time
    {
        public static float deltaTime = 1f / 60f;
    }

    public struct Color
    {
        public float r, g, b, a;
        public Color(float r, float g, float b, float a = 1f) { this.r = r; this.g = g; this.b = b; this.a = a; }
        public static Color cyan { get { return new Color(0, 1, 1); } }
        public static Color green { get { return new Color(0, 1, 0); } }
        public static Color red { get { return new Color(1, 0, 0); } }
    }

    public static class Debug
    {
        public static int RaysDrawn; // stub only: DrawRay calls
        public static Color LastRayColor; // stub only: the last DrawRay's color
        public static void DrawRay(Vector3 start, Vector3 dir, Color color) { RaysDrawn++; LastRayColor = color; }
        public static readonly List<string> Lines = new List<string>(); // stub only: what was logged
        public static void Log(object message) { lock (Lines) Lines.Add("log: " + message); }
        public static void LogWarning(object message) { lock (Lines) Lines.Add("warning: " + message); }
    }

    public static class Input
    {
        public static bool mouseButton0Down; // stub only: set by a test
        public static Vector3 mousePosition;
        public static bool GetMouseButtonDown(int button) { return button == 0 && mouseButton0Down; }
    }

    public enum PrimitiveType { Sphere, Capsule, Cylinder, Cube, Plane, Quad }

    public class Object
    {
        static int nextId = 1;
        readonly int instanceId = nextId++;
        public string name = "";
        public int GetInstanceID() { return instanceId; }

        public static T Instantiate<T>(T original, Transform parent) where T : Object
        {
            var go = original as GameObject;
            if (go == null) throw new NotSupportedException("stub: only GameObjects are instantiated");
            var clone = new GameObject(go.name + "(Clone)");
            clone.transform.SetParent(parent, false);
            return (T)(Object)clone;
        }

        public static void Destroy(Object obj) { }
    }

    public class Component : Object
    {
        internal GameObject owner;
        public GameObject gameObject { get { return owner; } }
        public Transform transform { get { return owner.transform; } }
        public T GetComponent<T>() where T : Component { return owner.GetComponent<T>(); }
    }

    public class Transform : Component
    {
        public Vector3 localPosition;
        public Vector3 localScale = Vector3.one;
        public Quaternion localRotation = Quaternion.identity;
        readonly List<Transform> children = new List<Transform>();
        public Transform parent { get; private set; }
        public int childCount { get { return children.Count; } }
        public Transform GetChild(int index) { return children[index]; }
        public void SetParent(Transform p, bool worldPositionStays)
        {
            if (parent != null) parent.children.Remove(this);
            parent = p;
            if (p != null) p.children.Add(this);
        }
    }

    public class Behaviour : Component
    {
        public bool enabled = true;
    }

    public class MonoBehaviour : Behaviour { }

    public class Camera : Behaviour
    {
        public static Camera main; // stub only: a test may set one
        public Ray ScreenPointToRay(Vector3 pos) { return new Ray(new Vector3(pos.x, 10, pos.y), new Vector3(0, -1, 0)); }
    }

    public sealed class GameObject : Object
    {
        readonly List<Component> components = new List<Component>();
        public Transform transform { get; private set; }
        public bool activeSelf { get; private set; }

        public GameObject() : this("GameObject") { }

        public GameObject(string name)
        {
            this.name = name;
            activeSelf = true;
            transform = new Transform();
            transform.owner = this;
            components.Add(transform);
        }

        public void SetActive(bool value) { activeSelf = value; }

        public T AddComponent<T>() where T : Component, new()
        {
            var c = new T();
            c.owner = this;
            components.Add(c);
            return c;
        }

        public T GetComponent<T>() where T : Component
        {
            foreach (var c in components)
                if (c is T) return (T)c;
            return null;
        }

        public static GameObject CreatePrimitive(PrimitiveType type) { return new GameObject(type.ToString()); }
    }
}
