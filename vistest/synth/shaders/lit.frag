#version 330 core
// vistest's lit mesh program (vistest/synth/render.py, docs/synth.md). The image of pyrender 0.1.45's
// metallic-roughness program (pyrender/shaders/mesh.frag) for the one case vistest draws: metallic 0,
// roughness 1, no emissive, occlusion or normal texture, exactly one directional light and an ambient term,
// an optional sRGB base-colour texture. With those constants its BRDF reduces to
//   F = 0.04 + 0.96 (1 - v.h)^5                     (Schlick, f0 = 0.04)
//   G = nv / (nv k' + k) * nl / (nl k' + k)         (Smith-Schlick, k = (r + 1)^2 / 8 = 0.5, k' = 1 - k)
//   D = 1 / pi                                      (GGX with a = r^2 = 1)
//   colour = nl * radiance * ((1 - F) * 0.96 base / pi + F G D / (4 nl nv + 0.001)) + base * ambient
// and the output pow(colour, 1 / 2.2) clamped to [0, 1]. The general program loops over arrays of point and
// spot lights and evaluates unused terms for every fragment: on Mesa's llvmpipe (a CPU) it costs 2.2-2.9x
// this one for the same pixels (tests/test_synth_video.py compares the two).
struct DirectionalLight {
    vec3 color;
    float intensity;
    vec3 direction;
};
struct Material {
    vec4 base_color_factor;
#ifdef HAS_BASE_COLOR_TEX
    sampler2D base_color_texture;
#endif
};

uniform Material material;
uniform DirectionalLight directional_lights[MAX_DIRECTIONAL_LIGHTS];
uniform vec3 cam_pos;
uniform vec3 ambient_light;

in vec3 frag_position;
in vec3 frag_normal;
in vec2 uv_0;

out vec4 frag_color;

const float PI = 3.141592653589793;

void main()
{
    vec4 base = material.base_color_factor;
#ifdef HAS_BASE_COLOR_TEX
    vec4 s = texture(material.base_color_texture, uv_0);  // sRGB texel -> linear
    vec3 lin = mix(s.rgb / 12.92, pow((s.rgb + 0.055) / 1.055, vec3(2.4)), step(vec3(0.04045), s.rgb));
    base = base * vec4(lin, s.a);
#endif
    vec3 n = normalize(frag_normal);
    vec3 v = normalize(cam_pos - frag_position);
    vec3 l = normalize(-directional_lights[0].direction);
    vec3 h = normalize(l + v);
    float nl = clamp(dot(n, l), 0.001, 1.0);
    float nv = clamp(abs(dot(n, v)), 0.001, 1.0);
    float q = clamp(1.0 - clamp(dot(v, h), 0.0, 1.0), 0.0, 1.0);
    float q2 = q * q;
    float F = 0.04 + 0.96 * (q2 * q2 * q);
    float G = (nv / (nv * 0.5 + 0.5)) * (nl / (nl * 0.5 + 0.5));
    float D = 1.0 / PI;
    vec3 radiance = directional_lights[0].intensity * directional_lights[0].color;
    vec3 colour = nl * radiance * ((1.0 - F) * 0.96 * base.rgb / PI + F * G * D / (4.0 * nl * nv + 0.001));
    colour += base.rgb * ambient_light;
    frag_color = clamp(vec4(pow(colour, vec3(1.0 / 2.2)), base.a), 0.0, 1.0);
}
